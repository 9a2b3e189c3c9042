//! The test environment: a temp home and state root, fixture payloads, and a runner.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

pub const SESSION: &str = "225d8c26-5cbd-4b52-b720-e8fe94443567";

pub fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/claude-code-2.1.330")
        .join(name);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn fixture_json(name: &str) -> Value {
    serde_json::from_str(&fixture(name)).unwrap()
}

/// A file of `../shared` (sessions and rollouts gathered from public repositories, and the
/// excerpts cut from them, which the project never commits), or `None` with one line saying the
/// test skipped it when `../shared` is absent. `CTXGUARD_SHARED` names another folder.
/// docs/testing.md lists the tests that read it.
pub fn shared(rel: &str) -> Option<PathBuf> {
    let root = shared_root();
    let path = root.join(rel);
    if path.exists() {
        return Some(path);
    }
    if root.is_dir() {
        panic!("{} is missing from {}", rel, root.display());
    }
    eprintln!(
        "skipped: {} is absent ({rel} is read from there)",
        root.display()
    );
    None
}

/// Where `../shared` is: `CTXGUARD_SHARED`, else the folder beside the checkout.
pub fn shared_root() -> PathBuf {
    match std::env::var_os("CTXGUARD_SHARED") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"),
    }
}

/// What one run of the binary did.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn from(out: Output) -> Run {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// The contract of every hook on bad input: exit 0, nothing on stdout, one stderr line.
    #[track_caller]
    pub fn assert_silent_failure(&self) {
        assert_eq!(self.code, 0, "{self:?}");
        assert_eq!(self.stdout, "", "{self:?}");
        assert_eq!(self.stderr.lines().count(), 1, "{self:?}");
    }
}

pub struct TestEnv {
    pub dir: tempfile::TempDir,
    env: Vec<(String, String)>,
}

impl TestEnv {
    pub fn new() -> TestEnv {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("home")).unwrap();
        TestEnv {
            dir,
            env: Vec::new(),
        }
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    pub fn set(&mut self, key: &str, value: &str) -> &mut Self {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ctxguard"));
        cmd.args(args);
        // Nothing from the developer's environment leaks in.
        for (key, _) in std::env::vars() {
            if key.starts_with("CTXGUARD_")
                || key.starts_with("CLAUDE_")
                || key.starts_with("CODEX_")
                || key.starts_with("PI_")
                || key == "NO_COLOR"
            {
                cmd.env_remove(key);
            }
        }
        // Nor a Claude Code or Codex the developer has installed: `install` and `doctor` ask
        // the one on PATH for its version (a test that wants one puts its own first).
        let path = std::env::var_os("PATH").unwrap_or_default();
        let without_claude = std::env::join_paths(std::env::split_paths(&path).filter(|dir| {
            ![
                "claude",
                "claude.exe",
                "claude.cmd",
                "codex",
                "codex.exe",
                "codex.cmd",
                "pi",
                "pi.exe",
                "pi.cmd",
            ]
            .iter()
            .any(|name| dir.join(name).is_file())
        }))
        .unwrap_or(path);
        // HOME is the home directory on Unix, USERPROFILE on Windows (as for the client).
        cmd.env("HOME", self.home())
            .env("USERPROFILE", self.home())
            .env("CTXGUARD_HOME", self.state())
            .env("PATH", without_claude)
            .env("RUST_BACKTRACE", "0");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    pub fn run(&self, args: &[&str], stdin: impl AsRef<[u8]>) -> Run {
        let mut cmd = self.command(args);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        Run::from(feed(cmd, stdin).wait_with_output().unwrap())
    }

    pub fn statusline(&self, payload: &Value) -> Run {
        self.run(&["statusline"], payload.to_string())
    }

    pub fn pretooluse(&self, payload: &Value) -> Run {
        self.run(&["pretooluse"], payload.to_string())
    }

    pub fn marker_path(&self, session: &str) -> PathBuf {
        self.state()
            .join("sessions")
            .join(session)
            .join("marker.json")
    }

    pub fn marker(&self, session: &str) -> Value {
        let path = self.marker_path(session);
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_str(&text).unwrap()
    }

    /// Edits the stored marker (to age it, for instance).
    pub fn edit_marker(&self, session: &str, edit: impl FnOnce(&mut Value)) {
        let mut m = self.marker(session);
        edit(&mut m);
        fs::write(self.marker_path(session), m.to_string()).unwrap();
    }

    /// Every file under the state root, with its contents.
    pub fn snapshot(&self) -> Vec<(PathBuf, Vec<u8>)> {
        fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
            let Ok(entries) = fs::read_dir(dir) else {
                return;
            };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else {
                    out.push((p.clone(), fs::read(&p).unwrap()));
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.state(), &mut out);
        out.sort();
        out
    }

    pub fn write(&self, name: &str, content: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        fs::write(&path, content).unwrap();
        path
    }
}

/// Spawns `cmd` (its stdout and stderr as the caller set them) and writes `stdin` to it. A hook
/// may exit before reading everything; a broken pipe is fine.
pub fn feed(mut cmd: Command, stdin: impl AsRef<[u8]>) -> std::process::Child {
    cmd.stdin(Stdio::piped());
    // Under wine (the Windows tests in CI), starting a process among dozens started at once
    // now and then fails for a moment; that is the harness's, not the hook's, so it is tried
    // again (and said), a few times.
    let mut tries = 0;
    let mut child = loop {
        match cmd.spawn() {
            Ok(child) => break child,
            Err(e) if tries < 5 => {
                tries += 1;
                eprintln!("starting {cmd:?} failed ({e}); trying again");
                std::thread::sleep(std::time::Duration::from_millis(200 * tries));
            }
            Err(e) => panic!("starting {cmd:?}: {e}"),
        }
    };
    let _ = child.stdin.take().unwrap().write_all(stdin.as_ref());
    child
}

/// The real status-line payload with `tokens` of usage (all in cache reads) on `window`.
pub fn statusline_payload(session: &str, tokens: Option<u64>, window: Option<u64>) -> Value {
    let mut p = fixture_json("statusline-after-turn.json");
    p["session_id"] = json!(session);
    let cw = &mut p["context_window"];
    match window {
        Some(w) => cw["context_window_size"] = json!(w),
        None => {
            cw.as_object_mut().unwrap().remove("context_window_size");
        }
    }
    cw["current_usage"] = match tokens {
        Some(t) => json!({"input_tokens": 10, "output_tokens": 20,
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": t - 10}),
        None => Value::Null,
    };
    // As the client computes it: the percent of its window, rounded.
    cw["used_percentage"] = match (tokens, window) {
        (Some(t), Some(w)) => json!((t * 100 + w / 2) / w),
        _ => Value::Null,
    };
    p
}

/// The real `PreToolUse` payload for `session`, pointing at `transcript`.
pub fn pretooluse_payload(session: &str, transcript: &Path) -> Value {
    let mut p = fixture_json("PreToolUse.json");
    p["session_id"] = json!(session);
    p["transcript_path"] = json!(transcript.to_str().unwrap());
    p
}

/// One main-chain assistant transcript line with `tokens` of context, from a model with a 200k
/// window (`claude-opus-4-6`, which the client compacts at its threshold); [`assistant_line_of`] names another.
pub fn assistant_line(tokens: u64, timestamp: &str) -> String {
    assistant_line_of("claude-opus-4-6", tokens, timestamp)
}

/// [`assistant_line`] from `model`.
pub fn assistant_line_of(model: &str, tokens: u64, timestamp: &str) -> String {
    json!({
        "type": "assistant", "isSidechain": false, "timestamp": timestamp,
        "message": {"id": "msg_x", "model": model, "role": "assistant",
                    "content": [{"type": "text", "text": "working"}],
                    "usage": {"input_tokens": 5, "cache_creation_input_tokens": 5,
                              "cache_read_input_tokens": tokens - 10, "output_tokens": 300}}
    })
    .to_string()
}

pub fn boundary_line(timestamp: &str) -> String {
    json!({"type": "system", "subtype": "compact_boundary", "timestamp": timestamp,
           "compactMetadata": {"trigger": "auto", "preTokens": 160000}})
    .to_string()
}

/// An RFC 3339 time `secs` from now.
pub fn time_from_now(secs: i64) -> String {
    (chrono::Utc::now() + chrono::Duration::seconds(secs)).to_rfc3339()
}

/// The `PreToolUse` output, decoded strictly: any other field fails the test.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HookOutput {
    pub hook_specific_output: SpecificOutput,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SpecificOutput {
    pub hook_event_name: String,
    pub additional_context: String,
}

/// Decodes a nudge, checking it is one line of exactly the allowed shape.
#[track_caller]
pub fn decode_nudge(stdout: &str) -> String {
    assert!(
        stdout.ends_with('\n') && stdout.matches('\n').count() == 1,
        "{stdout:?}"
    );
    assert!(!stdout.contains("permissionDecision") && !stdout.contains("\"decision\""));
    let out: HookOutput = serde_json::from_str(stdout).unwrap();
    assert_eq!(out.hook_specific_output.hook_event_name, "PreToolUse");
    out.hook_specific_output.additional_context
}

impl TestEnv {
    /// Runs with a deadline (a hook that hangs fails the test instead of stalling the suite) and,
    /// on Unix, a hard limit on the child's heap (`RLIMIT_DATA`): a hook that tried to hold more
    /// would fail to allocate and die, failing the test.
    pub fn run_within(
        &self,
        args: &[&str],
        stdin: impl AsRef<[u8]>,
        limit: std::time::Duration,
        max_heap: u64,
    ) -> Run {
        run_command_within(self.command(args), stdin, limit, max_heap)
    }
}

/// [`TestEnv::run_within`] for a command already prepared (its own arguments and variables).
pub fn run_command_within(
    mut cmd: Command,
    stdin: impl AsRef<[u8]>,
    limit: std::time::Duration,
    max_heap: u64,
) -> Run {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: setrlimit is async-signal-safe and only touches the child.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: max_heap,
                    rlim_max: max_heap,
                };
                if libc::setrlimit(libc::RLIMIT_DATA, &raw const lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    #[cfg(not(unix))]
    let _ = max_heap;
    let args: Vec<String> = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = feed(cmd, stdin);
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("ctxguard {args:?} still running after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    Run::from(child.wait_with_output().unwrap())
}

pub const CWD: &str = "/home/user/proj";

/// The real transcript up to (not including) its first compaction: what `PreCompact` saw when the
/// user ran `/compact keep the open items`.
pub fn before_first_compaction() -> String {
    let text = fixture("transcript-with-compaction.jsonl");
    text.lines().take(54).map(|l| format!("{l}\n")).collect()
}

pub fn precompact_payload(
    session: &str,
    transcript: &Path,
    trigger: &str,
    instructions: Value,
) -> Value {
    let mut p = fixture_json("PreCompact-manual.json");
    p["session_id"] = json!(session);
    p["transcript_path"] = json!(transcript.to_str().unwrap());
    p["trigger"] = json!(trigger);
    p["custom_instructions"] = instructions;
    p
}

pub fn sessionstart_payload(session: &str, source: &str, cwd: &str) -> Value {
    let mut p = fixture_json("SessionStart-compact.json");
    p["session_id"] = json!(session);
    p["source"] = json!(source);
    p["cwd"] = json!(cwd);
    p
}

/// Decodes a `SessionStart` output strictly and returns the block.
#[track_caller]
pub fn decode_block(stdout: &str) -> String {
    assert!(
        stdout.ends_with('\n') && stdout.matches('\n').count() == 1,
        "{stdout:?}"
    );
    let out: HookOutput = serde_json::from_str(stdout).unwrap();
    assert_eq!(out.hook_specific_output.hook_event_name, "SessionStart");
    out.hook_specific_output.additional_context
}

/// Appends lines to a transcript, as the client does.
pub fn append_lines(path: &Path, lines: &[String]) {
    use std::io::Write;
    let mut f = fs::OpenOptions::new().append(true).open(path).unwrap();
    for line in lines {
        writeln!(f, "{line}").unwrap();
    }
}

impl TestEnv {
    /// Runs `ctxguard ARGS` as if `secs` from now (`CTXGUARD_NOW`): consecutive compactions of
    /// one transcript minutes apart, so none is taken for a repeat of the one before.
    pub fn run_at(&self, secs: i64, args: &[&str], stdin: impl AsRef<[u8]>) -> Run {
        let mut cmd = self.command(args);
        cmd.env("CTXGUARD_NOW", time_from_now(secs));
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        Run::from(feed(cmd, stdin).wait_with_output().unwrap())
    }
}

/// The first words of the facts block `PreCompact` prints for the summarizer.
pub const FACTS: &str = "ctxguard (a hook) adds facts to preserve";

/// What `PreCompact` may print: nothing, or the facts block (tests/summary_facts.rs and the
/// `facts-*` golden files check the block itself).
pub fn facts_or_nothing(stdout: &str) -> bool {
    stdout.is_empty() || stdout.starts_with(FACTS)
}

/// Text of a session from a public repository, known to a test by its length and SHA-256 only:
/// the tree never holds such text (the session is read from `../shared`), yet the assertion is
/// as exact as the literal it replaced. `chars` counts characters.
#[derive(Debug, Clone, Copy)]
pub struct Quote {
    pub chars: usize,
    pub sha256: &'static str,
}

/// A [`Quote`] of `chars` characters whose SHA-256 (hex) starts with `sha256`.
pub const fn quote(chars: usize, sha256: &'static str) -> Quote {
    Quote { chars, sha256 }
}

impl Quote {
    fn matches(&self, text: &str) -> bool {
        use sha2::{Digest, Sha256};
        let hex: String = Sha256::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        text.chars().count() == self.chars && hex.starts_with(self.sha256)
    }

    /// `text` is the quote, whole.
    pub fn is(&self, text: &str) -> bool {
        self.matches(text)
    }

    /// `text` starts with the quote.
    pub fn starts(&self, text: &str) -> bool {
        self.matches(&text.chars().take(self.chars).collect::<String>())
    }

    /// `text` ends with the quote.
    pub fn ends(&self, text: &str) -> bool {
        let n = text.chars().count();
        self.matches(
            &text
                .chars()
                .skip(n.saturating_sub(self.chars))
                .collect::<String>(),
        )
    }

    /// The quote is somewhere in `text`.
    pub fn within(&self, text: &str) -> bool {
        self.find(text).is_some()
    }

    /// Where the quote first starts in `text` (a byte offset).
    pub fn find(&self, text: &str) -> Option<usize> {
        let starts: Vec<usize> = text.char_indices().map(|(at, _)| at).collect();
        (0..starts.len()).find_map(|i| {
            let end = starts.get(i + self.chars).copied().unwrap_or(text.len());
            (i + self.chars <= starts.len() && self.matches(&text[starts[i]..end]))
                .then_some(starts[i])
        })
    }
}
