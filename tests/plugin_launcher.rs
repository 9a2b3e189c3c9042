//! The plugin's launcher (`plugin/hooks/run.sh`) against a download that stalls: a loopback
//! server that sends its headers, then one byte a second for 40 s. Only the hook that started
//! the download waits for it (5 s, its default); every other hook returns at once, the first
//! one telling the user; the download ends within its bound whichever of curl and wget fetches
//! it; a lock is taken over only once the download that holds it has died.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::ship::{plugin_copy, posix_sh, release, user_command};
use crate::util::*;

/// How long the stall server holds a download, a byte a second.
const STALL: u64 = 40;
/// The generous bound of a hook that must not wait (the starter waits 5 s; the stall holds it
/// 40 s): on a loaded machine a shell script and a few forks take well under this.
const AT_ONCE: Duration = Duration::from_secs(3);

/// A server on 127.0.0.1 that answers every GET with headers, then a byte a second for `hold`
/// seconds; it logs each request's path, and is killed on drop.
pub(crate) struct Stall {
    child: Child,
    pub(crate) url: String,
    log: PathBuf,
}

impl Stall {
    pub(crate) fn start(log: PathBuf, hold: u64) -> Stall {
        let script = format!(
            r#"
import http.server, sys, time
log = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(log, "a") as f:
            f.write("GET " + self.path + "\n")
        self.send_response(200)
        self.send_header("Content-Length", "10000000")
        self.end_headers()
        try:
            for _ in range({hold}):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(1)
        except Exception:
            pass
    def log_message(self, *args):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
s.daemon_threads = True
print(s.server_address[1], flush=True)
s.serve_forever()
"#
        );
        let mut child = Command::new("python3")
            .args(["-u", "-c", &script])
            .arg(&log)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 serves the stall");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port: u16 = line.trim().parse().unwrap();
        Stall {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log,
        }
    }

    pub(crate) fn gets(&self) -> usize {
        fs::read_to_string(&self.log)
            .unwrap_or_default()
            .matches("GET ")
            .count()
    }
}

impl Drop for Stall {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plugin hook (`pretooluse`) through the launcher, started: its PATH, its variables.
fn hook(
    root: &Path,
    env: &TestEnv,
    data: &Path,
    url: &str,
    path: &str,
    vars: &[(&str, &str)],
) -> Child {
    let mut cmd = user_command(posix_sh(), &env.home());
    cmd.arg(root.join("hooks/run.sh"))
        .arg("pretooluse")
        .env("PATH", path)
        .env("CLAUDE_PLUGIN_ROOT", root)
        .env("CLAUDE_PLUGIN_DATA", data)
        .env("CTXGUARD_DOWNLOAD_URL", url)
        .env("CTXGUARD_HOME", env.state());
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    drop(child.stdin.take());
    child
}

/// The hook's output and how long it took from `start`.
fn finish(child: Child, start: Instant) -> (Run, Duration) {
    let out = child.wait_with_output().unwrap();
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    (run, start.elapsed())
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The download process holding the lock, stopped (it stops its own download).
fn stop_download(data: &Path) {
    if let Ok(pid) = fs::read_to_string(data.join("fetch.lock/pid")) {
        let _ = Command::new("kill")
            .arg(pid.trim())
            .stderr(Stdio::null())
            .status();
    }
}

#[test]
fn launcher_a_stalled_download_holds_only_the_hook_that_started_it() {
    let Some(release) = release() else {
        return;
    };
    let env = TestEnv::new();
    let stall = Stall::start(env.dir.path().join("stall.log"), STALL);
    let root = plugin_copy(release, &env.dir.path().join("market"));
    let data = env.dir.path().join("data");
    let path = "/usr/bin:/bin";
    let vars = [("CTXGUARD_DOWNLOAD_LIMIT", "60")];

    // The first hook starts the download and waits for it, 5 s.
    let start = Instant::now();
    let first = hook(&root, &env, &data, &stall.url, path, &vars);
    wait_for("the download starts", Duration::from_secs(10), || {
        stall.gets() == 1
    });
    // Another, meanwhile: back at once, and it tells the user, once.
    let second = Instant::now();
    let (run, took) = finish(hook(&root, &env, &data, &stall.url, path, &vars), second);
    assert!(took < AT_ONCE, "the second hook waited {took:?}");
    assert_eq!(run.code, 0, "{run:?}");
    let said: Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(
        said["systemMessage"]
            .as_str()
            .unwrap()
            .starts_with("ctxguard is being downloaded for its plugin (ctxguard-"),
        "{run:?}"
    );
    assert_eq!(said.as_object().unwrap().len(), 1, "{said}");
    assert!(
        run.stderr.contains("another hook is downloading"),
        "{run:?}"
    );
    // A third: back at once too, saying nothing more than its stderr line.
    let third = Instant::now();
    let (run, took) = finish(hook(&root, &env, &data, &stall.url, path, &vars), third);
    assert!(took < AT_ONCE, "the third hook waited {took:?}");
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
    // The first gives up after its few seconds, quietly.
    let (run, took) = finish(first, start);
    assert!(
        took < Duration::from_secs(15),
        "the first hook waited {took:?}"
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.is_empty(), "{run:?}");
    assert!(run.stderr.contains("downloading ctxguard-"), "{run:?}");

    // A lock an hour old whose download is alive is not taken over: no second download.
    let lock = data.join("fetch.lock");
    assert!(lock.join("pid").is_file());
    let touched = Command::new("touch")
        .args(["-d", "1 hour ago"])
        .arg(&lock)
        .status()
        .unwrap();
    assert!(touched.success());
    let (run, took) = finish(
        hook(&root, &env, &data, &stall.url, path, &vars),
        Instant::now(),
    );
    assert!(took < AT_ONCE, "{took:?}");
    assert_eq!(run.code, 0);
    assert_eq!(stall.gets(), 1, "no second download beside the first");

    // Its download killed with its lock left behind (as a killed process group leaves it): the
    // next hook takes the lock over and downloads again.
    let pid = fs::read_to_string(lock.join("pid")).unwrap();
    let kept = env.dir.path().join("kept-lock");
    fs::create_dir_all(&kept).unwrap();
    fs::copy(lock.join("pid"), kept.join("pid")).unwrap();
    let _ = Command::new("kill").args(["-KILL", pid.trim()]).status();
    wait_for("the download dies", Duration::from_secs(10), || {
        !Command::new("kill")
            .args(["-0", pid.trim()])
            .status()
            .unwrap()
            .success()
    });
    // SIGKILL ran no trap: the lock is still there unless it went first; put it back as left.
    if !lock.exists() {
        fs::rename(&kept, &lock).unwrap();
    }
    let again = hook(
        &root,
        &env,
        &data,
        &stall.url,
        path,
        &[
            ("CTXGUARD_DOWNLOAD_LIMIT", "60"),
            ("CTXGUARD_PLUGIN_WAIT", "1"),
        ],
    );
    let (run, _) = finish(again, Instant::now());
    assert_eq!(run.code, 0, "{run:?}");
    wait_for("a second download", Duration::from_secs(10), || {
        stall.gets() == 2
    });
    assert_ne!(
        fs::read_to_string(lock.join("pid")).unwrap_or_default(),
        pid,
        "a new download holds the lock"
    );
    stop_download(&data);
}

/// Every file of `/usr/bin` and `/bin` but curl, linked into `dir`: a machine with wget only.
fn without_curl(dir: &Path) -> String {
    fs::create_dir_all(dir).unwrap();
    for from in ["/usr/bin", "/bin"] {
        for entry in fs::read_dir(from).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let to = dir.join(&name);
            if name == "curl" || to.exists() {
                continue;
            }
            let _ = std::os::unix::fs::symlink(entry.path(), &to);
        }
    }
    dir.to_str().unwrap().to_string()
}

#[test]
fn launcher_bounds_a_download_in_total_time_with_curl_and_with_wget() {
    let Some(release) = release() else {
        return;
    };
    let env = TestEnv::new();
    let stall = Stall::start(env.dir.path().join("stall.log"), STALL);
    let root = plugin_copy(release, &env.dir.path().join("market"));
    let wget_only = without_curl(&env.dir.path().join("wget-only"));
    let has = |tool: &str, path: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .env("PATH", path)
            .output()
            .unwrap()
            .status
            .success()
    };
    for (tool, path) in [("curl", "/usr/bin:/bin"), ("wget", wget_only.as_str())] {
        if !has(tool, path) {
            eprintln!("launcher test of {tool} skipped: {tool} is not installed");
            continue;
        }
        if tool == "wget" {
            assert!(!has("curl", path));
        }
        let data = env.dir.path().join(format!("data-{tool}"));
        let start = Instant::now();
        let vars = [
            ("CTXGUARD_DOWNLOAD_LIMIT", "3"),
            ("CTXGUARD_PLUGIN_WAIT", "1"),
        ];
        let (run, _) = finish(hook(&root, &env, &data, &stall.url, path, &vars), start);
        assert_eq!(run.code, 0, "{tool}: {run:?}");
        // The stall would hold it 40 s; the bound ends it after 3.
        let failed = data.join("fetch.failed");
        wait_for(
            &format!("{tool}'s download ends"),
            Duration::from_secs(20),
            || failed.is_file() && !data.join("fetch.lock").exists(),
        );
        let took = start.elapsed();
        assert!(took < Duration::from_secs(20), "{tool}: {took:?}");
        let why = fs::read_to_string(&failed).unwrap();
        assert!(
            why.contains("within 3 seconds (CTXGUARD_DOWNLOAD_LIMIT)"),
            "{tool}: {why}"
        );
        assert!(!data.join("bin/ctxguard").exists());
        // Nothing of the download is left running or lying about.
        let mut left: Vec<String> = fs::read_dir(&data)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["bin", "fetch.failed"], "{tool}");
        // And the next hook reports it, without downloading again.
        let gets = stall.gets();
        let (run, _) = finish(
            hook(&root, &env, &data, &stall.url, path, &vars),
            Instant::now(),
        );
        assert!(
            run.stderr.contains("retried in 10 minutes"),
            "{tool}: {run:?}"
        );
        assert_eq!(stall.gets(), gets);
    }
}
