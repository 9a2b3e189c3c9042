//! The plugin from a marketplace, on the real client (Claude Code 2.1.332): `claude plugin
//! marketplace add` on a local folder laid out as the repository is, `claude plugin install
//! ctxguard@ctxguard`, no ctxguard on `PATH`, and the release (`ship.rs`) served on loopback.
//! The plugin's launcher downloads the binary into the plugin's data folder the client gives it
//! (`CLAUDE_PLUGIN_DATA`), checks it against the pins, and the session's hooks run it. Then the
//! user's side: `ctxguard` linked in `~/.local/bin` (doctor, status, log), the status line
//! alone beside the plugin, and `ctxguard uninstall --purge` taking everything out, the plugin
//! included.

use std::time::{Duration, Instant};

use super::*;
use crate::ship::{plugin_copy, release, Serve};

const VERSION: &str = "2.1.332";

impl Rig {
    /// `claude plugin ARGS` in the rig's home; its stdout.
    fn plugin(&self, args: &[&str]) -> String {
        let mut cmd = Command::new(&self.client);
        cmd.arg("plugin").args(args).stdin(Stdio::null());
        for (key, _) in std::env::vars() {
            if key.starts_with("CTXGUARD_")
                || key.starts_with("CLAUDE")
                || key.starts_with("ANTHROPIC")
            {
                cmd.env_remove(key);
            }
        }
        let out = cmd
            .env("HOME", self.env.home())
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .output()
            .expect("running claude plugin");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "claude plugin {args:?}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }
}

/// Every file named `name` under `dir`.
fn find(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(find(&path, name));
        } else if entry.file_name() == name {
            found.push(path);
        }
    }
    found
}

#[test]
fn ship_the_plugin_from_a_marketplace_downloads_the_binary_and_its_hooks_run() {
    let Some(release) = release() else {
        return;
    };
    let Some(client) = client_at(VERSION) else {
        return;
    };
    // 940k of the default model's 1M: the nudge is due at the first tool call that sees it.
    let Some(mut rig) = Rig::new(2, 940_000) else {
        return;
    };
    rig.client = client;
    let server = Serve::start(&release.dist, rig.env.dir.path().join("server.log"));

    // The repository as a marketplace (what `claude plugin marketplace add ctxguard/ctxguard`
    // clones), with the pins of the release being served.
    let market = rig.env.dir.path().join("market place");
    plugin_copy(release, &market);
    let added = rig.plugin(&["marketplace", "add", market.to_str().unwrap()]);
    assert!(added.contains("ctxguard"), "{added}");
    let installed = rig.plugin(&["install", "ctxguard@ctxguard"]);
    assert!(installed.contains("ctxguard@ctxguard"), "{installed}");

    // No ctxguard anywhere the launcher looks first.
    let path = std::env::var_os("PATH").unwrap_or_default();
    let path = std::env::join_paths(
        std::env::split_paths(&path).filter(|dir| !dir.join("ctxguard").exists()),
    )
    .unwrap();
    let path = path.to_str().unwrap();
    assert!(!Path::new("/usr/local/bin/ctxguard").exists());
    let settings = rig.env.dir.path().join("empty.json");
    fs::write(&settings, "{}").unwrap();
    let start = Instant::now();
    let out = rig.claude_with(
        &settings,
        "run two commands",
        None,
        &[],
        &[("CTXGUARD_DOWNLOAD_URL", &server.url), ("PATH", path)],
    );
    let took = start.elapsed();
    let session = out["session_id"].as_str().unwrap();

    // Downloaded once, into the data folder the client gives the plugin, as packaged.
    assert_eq!(server.gets(&release.archive()), 1);
    let bins = find(&rig.env.home().join(".claude/plugins/data"), "ctxguard");
    assert_eq!(bins.len(), 1, "{bins:?}");
    assert!(bins[0].ends_with("bin/ctxguard"), "{bins:?}");
    assert_eq!(
        fs::read(&bins[0]).unwrap(),
        fs::read(env!("CARGO_BIN_EXE_ctxguard")).unwrap()
    );
    // And the session's hooks ran it: the nudge reached the model once, and the marker says so.
    let requests = rig.api.requests();
    assert_eq!(
        count(requests.last().unwrap(), ANY_NUDGE),
        1,
        "{requests:?}"
    );
    assert_eq!(rig.env.marker(session)["state"], "nudged");
    // No hook held the session up for long: the whole run, three requests and every hook,
    // well within one hook timeout.
    assert!(took.as_secs() < 60, "{took:?}");

    // The link was said to the user, once: the client shows a hook's systemMessage (it records
    // it as a `hook_system_message` attachment).
    let said: Vec<Value> = find_all(&rig.env.home().join(".claude/projects"))
        .iter()
        .flat_map(|t| {
            fs::read_to_string(t)
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .collect::<Vec<_>>()
        })
        .filter(|l| l["attachment"]["type"] == "hook_system_message")
        .collect();
    assert_eq!(said.len(), 1, "{said:#?}");
    let message = said[0]["attachment"]["content"].as_str().unwrap();
    assert!(
        message.starts_with(&format!(
            "ctxguard: linked {} to the binary this plugin downloaded",
            rig.env.home().join(".local/bin/ctxguard").display()
        )),
        "{message}"
    );
    // The plugin as the client installed it holds the plugin and nothing else.
    let manifests = find(&rig.env.home().join(".claude/plugins/cache"), "plugin.json");
    assert_eq!(manifests.len(), 1, "{manifests:?}");
    let installed_root = manifests[0].parent().unwrap().parent().unwrap();
    let mut shipped: Vec<String> = find_all(installed_root)
        .iter()
        .map(|p| {
            p.strip_prefix(installed_root)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    shipped.sort();
    assert_eq!(
        shipped,
        [
            ".claude-plugin/plugin.json",
            "README.md",
            "hooks/hooks.json",
            "hooks/release.sha256",
            "hooks/run.sh"
        ],
        "{}",
        installed_root.display()
    );

    // 1. The user has `ctxguard`: the launcher linked it to the binary it downloaded.
    let link = rig.env.home().join(".local/bin/ctxguard");
    assert_eq!(fs::read_link(&link).unwrap(), bins[0]);
    let client_dir = rig.client.parent().unwrap().to_path_buf();
    let user_path = format!(
        "{}:{}:{path}",
        link.parent().unwrap().display(),
        client_dir.display()
    );
    let user = |args: &[&str]| -> (i32, String, String) {
        let out = Command::new("ctxguard")
            .args(args)
            .env_clear()
            .env("HOME", rig.env.home())
            .env("CTXGUARD_HOME", rig.env.state())
            .env("PATH", &user_path)
            .env("DISABLE_AUTOUPDATER", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .current_dir(rig.env.dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, status, err) = user(&["status"]);
    assert_eq!(code, 0, "{status}{err}");
    assert!(status.contains(session), "{status}");
    let (code, _, err) = user(&["log"]);
    assert_eq!(code, 0, "{err}");
    let doctor = || -> Value {
        let (_, out, err) = user(&["doctor", "--json"]);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"))
    };
    let of = |report: &Value, check: &str| -> Vec<(String, String)> {
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["check"] == check)
            .map(|f| {
                (
                    f["status"].as_str().unwrap().to_string(),
                    f["message"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let report = doctor();
    let plugin = of(&report, "plugin");
    assert_eq!(plugin.len(), 1, "{plugin:?}");
    assert_eq!(plugin[0].0, "ok", "{plugin:?}");
    assert!(
        plugin[0].1.contains("downloaded")
            && plugin[0]
                .1
                .contains(&format!("run as its link {}", link.display())),
        "{plugin:?}"
    );
    let hooks = of(&report, "hooks");
    assert!(
        hooks
            .iter()
            .filter(|(_, m)| m.contains("runs `ctxguard"))
            .all(|(s, m)| s == "ok" && m.contains("the ctxguard plugin")),
        "{hooks:?}"
    );

    // 2. The status line alone, beside the plugin: no hook twice, doctor content.
    let (code, out, err) = user(&["install", "--statusline-only"]);
    assert_eq!(code, 0, "{out}{err}");
    let settings: Value = serde_json::from_str(
        &fs::read_to_string(rig.env.home().join(".claude/settings.json")).unwrap(),
    )
    .unwrap();
    assert!(settings.get("hooks").is_none(), "{settings:#}");
    assert!(
        settings["statusLine"]["command"]
            .as_str()
            .unwrap()
            .ends_with(" statusline"),
        "{settings:#}"
    );
    let report = doctor();
    assert!(
        of(&report, "hooks")
            .iter()
            .all(|(s, _)| s != "warn" && s != "fail"),
        "{report:#}"
    );
    assert_eq!(of(&report, "statusline")[0].0, "ok", "{report:#}");
    // The client still takes the settings, plugin and status line together.
    let listed = rig.plugin(&["list"]);
    assert!(listed.contains("ctxguard@ctxguard"), "{listed}");

    // 5. One command takes it all out: the status line, the state, the link, the plugin and
    // its data folder (with the binary that ran the command).
    let (code, out, err) = user(&["uninstall", "--purge"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("ran `claude plugin uninstall ctxguard@ctxguard`"),
        "{out}{err}"
    );
    assert!(!rig.env.state().exists(), "{out}");
    assert!(fs::symlink_metadata(&link).is_err(), "{out}");
    assert!(find(&rig.env.home().join(".claude/plugins/data"), "ctxguard").is_empty());
    let listed = rig.plugin(&["list"]);
    assert!(!listed.contains("ctxguard@ctxguard"), "{listed}");
    let settings = fs::read_to_string(rig.env.home().join(".claude/settings.json")).unwrap();
    assert!(!settings.contains("statusline"), "{settings}");
}

/// Every file under `dir`.
fn find_all(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(find_all(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// The session: the first download stalls (headers, then a byte a second). The hook that
/// started it waits for it (here 20 s, `CTXGUARD_PLUGIN_WAIT`), every other hook of the session
/// returns at once, and the user is told once that ctxguard is being downloaded. Were every hook
/// to wait, the session's hooks (SessionStart, UserPromptSubmit, a PreToolUse and a
/// PostToolBatch per tool call, Stop) would take 20 s each, over two minutes.
#[test]
fn ship_a_stalled_download_holds_up_one_hook_of_the_session_and_is_said_once() {
    let Some(release) = release() else {
        return;
    };
    let Some(client) = client_at(VERSION) else {
        return;
    };
    let Some(mut rig) = Rig::new(2, 940_000) else {
        return;
    };
    rig.client = client;
    // Longer than the session: a hook that waited would wait its whole 20 s.
    let stall = crate::plugin_launcher::Stall::start(rig.env.dir.path().join("stall.log"), 300);
    let market = rig.env.dir.path().join("market");
    plugin_copy(release, &market);
    rig.plugin(&["marketplace", "add", market.to_str().unwrap()]);
    rig.plugin(&["install", "ctxguard@ctxguard"]);
    let path = std::env::var_os("PATH").unwrap_or_default();
    let path = std::env::join_paths(
        std::env::split_paths(&path).filter(|dir| !dir.join("ctxguard").exists()),
    )
    .unwrap();
    let settings = rig.env.dir.path().join("empty.json");
    fs::write(&settings, "{}").unwrap();
    let start = Instant::now();
    let out = rig.claude_with(
        &settings,
        "run two commands",
        None,
        &[],
        &[
            ("CTXGUARD_DOWNLOAD_URL", &stall.url),
            ("CTXGUARD_PLUGIN_WAIT", "20"),
            ("CTXGUARD_DOWNLOAD_LIMIT", "100"),
            ("PATH", path.to_str().unwrap()),
        ],
    );
    let took = start.elapsed();
    assert!(out["session_id"].is_string(), "{out:#}");
    assert_eq!(stall.gets(), 1, "one download");
    assert!(took < Duration::from_secs(60), "the session took {took:?}");
    // No ctxguard ran: the model got no nudge, and the session went on.
    assert_eq!(count(rig.api.requests().last().unwrap(), ANY_NUDGE), 0);
    let said: Vec<String> = find_all(&rig.env.home().join(".claude/projects"))
        .iter()
        .flat_map(|t| {
            fs::read_to_string(t)
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .collect::<Vec<_>>()
        })
        .filter(|l| l["attachment"]["type"] == "hook_system_message")
        .filter_map(|l| Some(l["attachment"]["content"].as_str()?.to_string()))
        .collect();
    assert_eq!(said.len(), 1, "{said:#?}");
    assert!(
        said[0].starts_with("ctxguard is being downloaded for its plugin (ctxguard-"),
        "{said:?}"
    );
}
