//! End-to-end in the TUI: the real Claude Code client, interactive, inside tmux, with
//! `ctxguard statusline` registered as its status line (which the client runs only in the TUI,
//! never in `-p` mode) and ctxguard's `PreToolUse` hook, against the stand-in API
//! (`tests/e2e/fake_api.py`). For 2.1.330 (its default model has a 1M window) and 2.1.14 (200k):
//! a text-only answer reports usage past the trigger, the status line draws the gauge and arms
//! the marker; the next prompt's first tool call carries the nudge to the model, once.
//!
//! Only `PreToolUse` is registered: with `UserPromptSubmit` too, the nudge the status line armed
//! would go out with the second prompt instead (a text-only exchange crossed the trigger).
//! The client's first-run dialogs (onboarding, trusting the folder, using the API key from the
//! environment) are answered in advance in the test home's `~/.claude.json`; no keystroke but the
//! prompts is sent. Without tmux or npm these tests say so and pass without checking.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{client_at, count, FakeApi, Script};
use crate::util::TestEnv;

const API_KEY: &str = "sk-ant-e2e-test";
const NUDGE: &str = "PreToolUse:Bash hook additional context: ctxguard:";
/// Long enough for a cold start of the client on a busy 2-core machine; a step normally takes
/// a few seconds at most.
const STEP: Duration = Duration::from_secs(30);

fn tmux_available() -> bool {
    let found = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("TUI e2e tests skipped: tmux is not installed (apt-get install tmux)");
    }
    found
}

/// The requests of the conversation itself, in order: to /v1/messages, with tools, and
/// neither 2.1.14's warmup nor its prompt suggestions.
fn conversation(api: &FakeApi) -> Vec<Value> {
    let log = fs::read_to_string(&api.log).unwrap_or_default();
    // A line the stand-in is still writing is read at the next poll.
    let whole = &log[..log.rfind('\n').map_or(0, |end| end + 1)];
    whole
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| {
            let path = r["path"].as_str().unwrap_or("");
            path.split('?').next().unwrap().ends_with("/v1/messages")
        })
        .map(|r| r["body"].clone())
        .filter(|b| b["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .filter(|b| !b["messages"][0]["content"].to_string().contains("Warmup"))
        .filter(|b| {
            let messages = b["messages"].as_array().unwrap();
            let last = messages.last().unwrap()["content"].to_string();
            !last.contains("Reply with ONLY the suggestion")
        })
        .collect()
}

/// The client running in a private tmux server (its own socket and config). On drop the
/// client's process group is killed (2.1.14 can outlive the hangup of its terminal) and the
/// server with it.
struct Tui {
    socket: PathBuf,
    pgid: i32,
}

impl Tui {
    fn tmux(&self) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.arg("-S").arg(&self.socket);
        cmd
    }

    /// The visible screen, as text (the no-break spaces the client draws, as spaces).
    fn screen(&self) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p", "-t", "tui"])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).replace('\u{a0}', " ")
    }

    /// Polls `check` until it gives a value; past [`STEP`], fails showing the screen.
    fn wait_for<T>(&self, what: &str, mut check: impl FnMut(&str) -> Option<T>) -> T {
        let deadline = Instant::now() + STEP;
        loop {
            let screen = self.screen();
            if let Some(v) = check(&screen) {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; the screen:\n{screen}"
            );
            sleep(Duration::from_millis(100));
        }
    }

    /// Types `prompt` into the input box, waits until it shows there, and sends it.
    fn submit(&self, prompt: &str) {
        let typed = self
            .tmux()
            .args(["send-keys", "-t", "tui", "-l", prompt])
            .status()
            .unwrap();
        assert!(typed.success());
        self.wait_for(&format!("{prompt:?} in the input box"), |s| {
            s.contains(&format!("❯ {prompt}")).then_some(())
        });
        let sent = self
            .tmux()
            .args(["send-keys", "-t", "tui", "Enter"])
            .status()
            .unwrap();
        assert!(sent.success());
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        // Only while the pane's process lives: a pid tmux has reaped may be reused.
        let alive = || {
            self.tmux()
                .args(["display-message", "-p", "-t", "tui", "#{pane_dead}"])
                .output()
                .is_ok_and(|o| o.stdout.starts_with(b"0"))
        };
        if alive() && self.pgid > 1 {
            // SAFETY: a plain signal to the process group tmux started the client in.
            unsafe {
                libc::kill(-self.pgid, libc::SIGKILL);
            }
            // tmux reaps it (the pane stays, dead) before the server goes.
            let deadline = Instant::now() + Duration::from_secs(2);
            while alive() && Instant::now() < deadline {
                sleep(Duration::from_millis(20));
            }
        }
        let _ = self
            .tmux()
            .arg("kill-server")
            .stderr(Stdio::null())
            .status();
    }
}

/// One client version, in the TUI, with ctxguard as its status line and `PreToolUse` hook.
struct Case {
    version: &'static str,
    /// Context tokens in every reply: past the trigger, short of critical.
    tokens: u64,
    /// The stand-in's extra arguments for this client.
    api_args: &'static [&'static str],
    /// The gauge once the first reply is in, before anything was said.
    gauge: &'static str,
    /// How the nudge describes the context.
    full: &'static str,
    window: u64,
}

/// The project directory of a test (canonical, as the client names it), with the client's
/// first-run dialogs answered for it.
fn project_in(env: &TestEnv) -> PathBuf {
    let project = env.dir.path().join("project");
    fs::create_dir_all(&project).unwrap();
    let project = fs::canonicalize(&project).unwrap();
    answer_dialogs(env, &project);
    project
}

fn quote(p: &Path) -> String {
    format!("'{}'", p.to_str().unwrap().replace('\'', r"'\''"))
}

/// The status line as `ctxguard install` registers it: a shell line.
fn statusline_command() -> String {
    format!(
        "{} statusline",
        quote(Path::new(env!("CARGO_BIN_EXE_ctxguard")))
    )
}

/// `ctxguard SUB` through the logging wrapper of the other end-to-end tests, as a shell line
/// (2.1.14 has no exec form), logging to `hooks.log` (returned) in the test's directory.
fn logged_hook(env: &TestEnv, sub: &str) -> (String, PathBuf) {
    let hook_log = env.dir.path().join("hooks.log");
    let wrapper = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/hook.sh");
    let bin = Path::new(env!("CARGO_BIN_EXE_ctxguard"));
    let line = format!(
        "{} {} {} {sub}",
        quote(&wrapper),
        quote(&hook_log),
        quote(bin)
    );
    (line, hook_log)
}

/// The first-run dialogs, answered: onboarding done, this folder trusted, and the API key from
/// the environment accepted (the client keeps its last 20 characters); no self-update.
fn answer_dialogs(env: &TestEnv, project: &Path) {
    let key_suffix = &API_KEY[API_KEY.len().saturating_sub(20)..];
    let state = json!({
        "hasCompletedOnboarding": true,
        "autoUpdates": false,
        "customApiKeyResponses": {"approved": [key_suffix], "rejected": []},
        "projects": {project.to_str().unwrap(): {"hasTrustDialogAccepted": true}},
    });
    fs::write(env.home().join(".claude.json"), state.to_string()).unwrap();
}

fn status_line_arms_and_the_next_tool_call_is_nudged_once(case: &Case) {
    if !tmux_available() {
        return;
    }
    let Some(client) = client_at(case.version) else {
        return;
    };
    let env = TestEnv::new();
    let dir = env.dir.path();
    let project = project_in(&env);
    let (pretooluse, hook_log) = logged_hook(&env, "pretooluse");
    let settings = dir.join("settings.json");
    let config = json!({
        "statusLine": {"type": "command", "command": statusline_command()},
        "hooks": {"PreToolUse": [{"matcher": "*",
                                  "hooks": [{"type": "command", "command": pretooluse}]}]},
    });
    fs::write(&settings, config.to_string()).unwrap();
    let script = Script {
        tool_calls: 2,
        context_tokens: case.tokens,
        after_compact_tokens: None,
        agent: true,
    };
    let api = FakeApi::start_with(dir, script, case.api_args);

    let tui = start(&client, &env, &project, &settings, api.port);
    // The status line runs once the session is up, before any usage is known.
    tui.wait_for("the first status line", |s| {
        s.contains("ctx ?/").then_some(())
    });

    // A text-only answer past the trigger: only the status line can arm the marker.
    tui.submit("CHAT first");
    tui.wait_for("the gauge after the first answer", |s| {
        s.contains(case.gauge).then_some(())
    });
    let session = find_session(&env);
    let armed = env.marker(&session);
    assert_eq!(
        (
            armed["state"].as_str(),
            armed["source"].as_str(),
            armed["tokens"].as_u64(),
            armed["window"].as_u64(),
        ),
        (
            Some("armed"),
            Some("statusline"),
            Some(case.tokens + 10),
            Some(case.window)
        ),
        "{armed}"
    );
    assert!(armed["statusline_at"].is_string(), "{armed}");
    assert!(armed["nudged_at"].is_null(), "{armed}");
    assert!(!tui.screen().contains("asked to save"));
    let first = conversation(&api);
    assert_eq!(first.len(), 1, "one request, answered with text");
    assert_eq!(count(&first[0], NUDGE), 0);

    // Two tool calls: the first one's PreToolUse finds the marker armed and nudges.
    tui.submit("run two commands");
    let done = format!("{} · asked to save", case.gauge);
    let requests = tui.wait_for("the two tool calls and the gauge's trace", |s| {
        let requests = conversation(&api);
        let ran = pretooluse_runs(&hook_log).len() == 2;
        (ran && requests.len() >= 4 && s.contains(&done)).then_some(requests)
    });
    let counts: Vec<usize> = requests.iter().map(|r| count(r, NUDGE)).collect();
    assert_eq!(
        counts,
        [0, 0, 1, 1],
        "the answer, the first tool call, then the nudge after it, carried in the history"
    );
    let last = requests.last().unwrap().to_string();
    assert!(last.contains(case.full), "{last}");
    for n in 1..=2 {
        assert!(last.contains(&format!("ctxguard-e2e-{n}")), "tool call {n}");
    }
    let printed: Vec<bool> = pretooluse_runs(&hook_log)
        .iter()
        .map(|out| !out.is_empty())
        .collect();
    assert_eq!(printed, [true, false], "one nudge, at the first tool call");
    let nudged = env.marker(&session);
    assert_eq!(nudged["state"], "nudged", "{nudged}");
    assert_eq!(
        nudged["armed_at"], armed["armed_at"],
        "armed by the status line"
    );
    let at = |v: &Value| v.as_str().unwrap().parse::<DateTime<Utc>>().unwrap();
    assert!(
        at(&nudged["nudged_at"]) > at(&armed["armed_at"]),
        "{nudged}"
    );
    assert_eq!(nudged["last_nudge"]["critical"], false, "{nudged}");
}

/// The real 2.1.330 TUI in tmux with ctxguard's status line and `hooks` (event, subcommand), each
/// through the logging wrapper, against the stand-in scripted by `script`; the first status
/// line drawn. `None` (said) without tmux or the client.
fn tui_with_hooks(hooks: &[(&str, &str)], script: Script) -> Option<TuiRig> {
    tui_with_env(hooks, script, &[])
}

/// [`tui_with_hooks`] with these variables in the settings' `env` block (the client applies it
/// to itself and to every hook).
fn tui_with_env(hooks: &[(&str, &str)], script: Script, vars: &[(&str, &str)]) -> Option<TuiRig> {
    tui_on("2.1.330", hooks, script, vars)
}

/// [`tui_with_env`] on the client `version`.
fn tui_on(
    version: &str,
    hooks: &[(&str, &str)],
    script: Script,
    vars: &[(&str, &str)],
) -> Option<TuiRig> {
    if !tmux_available() {
        return None;
    }
    let client = client_at(version)?;
    let env = TestEnv::new();
    let dir = env.dir.path().to_path_buf();
    let project = project_in(&env);
    let mut registered = serde_json::Map::new();
    for (event, sub) in hooks {
        let line = logged_hook(&env, sub).0;
        registered.insert(
            (*event).to_string(),
            json!([{"hooks": [{"type": "command", "command": line}]}]),
        );
    }
    let hook_log = logged_hook(&env, "").1;
    let settings = dir.join("settings.json");
    let vars: serde_json::Map<String, Value> = vars
        .iter()
        .map(|(k, v)| ((*k).to_string(), json!(v)))
        .collect();
    let config = json!({
        "statusLine": {"type": "command", "command": statusline_command()},
        "hooks": registered,
        "env": vars,
    });
    fs::write(&settings, config.to_string()).unwrap();
    let api = FakeApi::start_with(&dir, script, &[]);
    let tui = start(&client, &env, &project, &settings, api.port);
    tui.wait_for("the first status line", |s| {
        s.contains("ctx ?/").then_some(())
    });
    Some(TuiRig {
        tui,
        api,
        hook_log,
        env,
    })
}

/// A TUI session and what it runs against; dropped in this order (the client first).
struct TuiRig {
    tui: Tui,
    api: FakeApi,
    hook_log: PathBuf,
    env: TestEnv,
}

impl TuiRig {
    /// The outputs of every run of hook `sub`, in order.
    fn runs(&self, sub: &str) -> Vec<String> {
        fs::read_to_string(&self.hook_log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with(&format!("{sub}\t")))
            .map(|l| l.splitn(4, '\t').nth(3).unwrap_or("").to_string())
            .collect()
    }
}

/// Starts `client` in a private tmux server, in `project`, with the rig's home and state and the
/// stand-in's address (none of the developer's `CLAUDE*`, `ANTHROPIC*` or `CTXGUARD_*` variables).
fn start(client: &Path, env: &TestEnv, project: &Path, settings: &Path, port: u16) -> Tui {
    let dir = env.dir.path();
    let conf = dir.join("tmux.conf");
    // The pane stays after the client exits (its last screen tells why); focus events quiet the
    // client's notice about them.
    fs::write(&conf, "set -g remain-on-exit on\nset -g focus-events on\n").unwrap();
    let socket = dir.join("tmux.sock");
    let mut cmd = Command::new("tmux");
    cmd.arg("-S").arg(&socket).arg("-f").arg(&conf);
    cmd.args(["new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", "tui"])
        .args(["-x", "160", "-y", "50", "-c"])
        .arg(project)
        .arg(client)
        .arg("--settings")
        .arg(settings)
        .args(["--allowedTools", "Bash"]);
    // The server is started here, so its environment (which the client inherits) is this one.
    for (key, _) in std::env::vars() {
        if key.starts_with("CTXGUARD_")
            || key.starts_with("CLAUDE")
            || key.starts_with("ANTHROPIC")
            || key.starts_with("TMUX")
        {
            cmd.env_remove(key);
        }
    }
    cmd.env("HOME", env.home())
        .env("CTXGUARD_HOME", env.state())
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env("ANTHROPIC_API_KEY", API_KEY)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        // Never let the client update itself (into the system npm) during a test.
        .env("DISABLE_AUTOUPDATER", "1");
    let out = cmd.output().expect("running tmux");
    // The guard first, so the server goes even if what follows fails.
    let pgid = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    let tui = Tui { socket, pgid };
    assert!(
        out.status.success() && pgid > 1,
        "tmux new-session: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    tui
}

/// The one session ctxguard keeps state for.
fn find_session(env: &TestEnv) -> String {
    let sessions: Vec<String> = fs::read_dir(env.state().join("sessions"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    sessions.into_iter().next().unwrap()
}

/// The client's transcript of `session` (under its projects folder).
fn transcript_of(env: &TestEnv, session: &str) -> PathBuf {
    let projects = env.home().join(".claude/projects");
    fs::read_dir(&projects)
        .into_iter()
        .flatten()
        .flatten()
        .map(|d| d.path().join(format!("{session}.jsonl")))
        .find(|p| p.exists())
        .unwrap_or_default()
}

/// The stdout of every `PreToolUse` run, in order (see `tests/e2e/hook.sh`).
fn pretooluse_runs(log: &Path) -> Vec<String> {
    fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let fields: Vec<&str> = l.splitn(4, '\t').collect();
            assert_eq!(fields[1], "0", "{l}");
            (fields[0] == "pretooluse").then(|| fields.get(3).unwrap_or(&"").to_string())
        })
        .collect()
}

#[test]
fn tui_status_line_arms_and_the_next_tool_call_is_nudged_once() {
    // The default model, claude-opus-5-5, has 1M: 940k is past its trigger (927k), short of
    // critical (952k).
    status_line_arms_and_the_next_tool_call_is_nudged_once(&Case {
        version: "2.1.330",
        tokens: 940_000,
        api_args: &[],
        gauge: "ctx 94% · 940k/1M · compacts in 27k · idle≥200k",
        full: "(940k are in context now)",
        window: 1_000_000,
    });
}

#[test]
fn tui_older_client_status_line_arms_and_the_next_tool_call_is_nudged_once() {
    // 2.1.14's default model, claude-sonnet-4-5-20250929, has 200k, and 2.1.14 reserves the
    // reply's whole 32k output: it compacts at 155k, so 125k is past the trigger (115k), short
    // of critical (140k). It asks the API things on the side, answered apart.
    status_line_arms_and_the_next_tool_call_is_nudged_once(&Case {
        version: "2.1.14",
        tokens: 125_000,
        api_args: &["--side-requests"],
        gauge: "ctx 63% · 125k/200k · compacts in 30k",
        full: "(125k are in context now)",
        window: 200_000,
    });
}

/// `/compact` typed in the TUI: PreCompact writes the checkpoint, SessionStart(compact) hands
/// over the recovery, which the next request carries once, and PostCompact runs here too (a
/// public report said the TUI never fires it; 2.1.330 does), so the summary is kept.
#[test]
fn tui_compact_checkpoints_and_recovers() {
    let hooks = [
        ("PreCompact", "precompact"),
        ("PostCompact", "postcompact"),
        ("SessionStart", "sessionstart"),
    ];
    let script = Script {
        tool_calls: 1,
        context_tokens: 50_000,
        after_compact_tokens: Some(5_000),
        agent: true,
    };
    let Some(rig) = tui_with_hooks(&hooks, script) else {
        return;
    };
    let (tui, api, env) = (&rig.tui, &rig.api, &rig.env);
    tui.submit("CHAT plan the parser");
    tui.wait_for("the gauge", |s| s.contains("ctx 5% · 50k/1M").then_some(()));
    tui.submit("/compact keep the parser plan");
    let runs = |sub: &str| rig.runs(sub).len();
    tui.wait_for("PreCompact and SessionStart(compact)", |_| {
        (runs("precompact") == 1 && runs("sessionstart") >= 2).then_some(())
    });
    let session = find_session(env);
    let cp = env
        .state()
        .join("checkpoints")
        .join(&session)
        .join("_latest.json");
    let cp: Value = serde_json::from_str(&fs::read_to_string(cp).unwrap()).unwrap();
    assert_eq!(cp["meta"]["trigger"], "manual");
    assert_eq!(cp["meta"]["custom_instructions"], "keep the parser plan");
    assert_eq!(cp["asks"], json!(["CHAT plan the parser"]));
    let marker = env.marker(&session);
    assert_eq!(marker["recovery_pending"], false, "{marker}");
    tui.wait_for("PostCompact", |_| (runs("postcompact") == 1).then_some(()));
    let summaries: Vec<String> = fs::read_dir(env.state().join("checkpoints").join(&session))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".summary.md"))
        .collect();
    assert_eq!(summaries.len(), 1, "{summaries:?}");
    // The next request carries the recovery block, once.
    let before = conversation(api).len();
    tui.submit("CHAT what next");
    let requests = tui.wait_for("the next request", |_| {
        let r = conversation(api);
        (r.len() > before).then_some(r)
    });
    let last = requests.last().unwrap();
    assert_eq!(
        count(last, "## ctxguard recovery: compaction #1"),
        1,
        "{last}"
    );
    assert!(last.to_string().contains("plan the parser"), "{last}");
}

/// Before an idle compaction can take the session: the real 2.1.330 TUI, attended, a text-only
/// answer at 250k of 1M (far below the nudge, past idle compaction's 200k). No tool call comes,
/// so only the Stop hook can ask the agent to save. Its `additionalContext` reaches the model
/// once, as `Stop hook additional context`, the agent answers once more, and the Stop after
/// that (`stop_hook_active`) is quiet; the user sees the client's neutral "Stop hook says",
/// never "reported a problem". What the user sees is recorded in docs/states.md.
#[test]
fn tui_stop_asks_once_to_save_before_an_idle_compaction() {
    let script = Script {
        tool_calls: 0,
        context_tokens: 250_000,
        after_compact_tokens: None,
        agent: true,
    };
    let Some(rig) = tui_with_hooks(&[("Stop", "stop")], script) else {
        return;
    };
    let (tui, api, env) = (&rig.tui, &rig.api, &rig.env);
    tui.submit("CHAT sum up the design");
    let stops = || rig.runs("stop");
    tui.wait_for("the first Stop", |_| (!stops().is_empty()).then_some(()));
    let session = find_session(env);
    assert!(
        stops()[0].contains("additionalContext"),
        "{:?} {}",
        stops(),
        env.marker(&session)
    );
    let requests = tui.wait_for("the answer, the Stop nudge and the answer to it", |_| {
        let r = conversation(api);
        (stops().len() >= 2 && r.len() >= 2).then_some(r)
    });
    // A moment for anything more to happen (it must not).
    sleep(Duration::from_secs(2));
    let requests = if conversation(api).len() > requests.len() {
        conversation(api)
    } else {
        requests
    };
    let runs = stops();
    assert_eq!(runs.len(), 2, "{runs:?}");
    let first: Value = serde_json::from_str(&runs[0]).unwrap();
    let text = first["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(
        first["hookSpecificOutput"]["hookEventName"], "Stop",
        "{first}"
    );
    assert!(first.get("decision").is_none(), "{first}");
    assert!(
        text.starts_with("ctxguard: an hour idle compacts these 250k tokens"),
        "{first}"
    );
    assert_eq!(
        runs[1], "",
        "the turn the hook continued is not continued again"
    );
    assert_eq!(requests.len(), 2, "one more model call, no loop");
    // The text reaches the model once, after the answer (the client's system prompt names the
    // Stop hook's labels too, so only the messages are counted).
    let said = "ctxguard: an hour idle compacts these 250k tokens";
    assert_eq!(count(&requests[0]["messages"], said), 0);
    assert_eq!(count(&requests[1]["messages"], said), 1, "{}", requests[1]);
    for never in ["Stop hook feedback", "Stop hook blocking error"] {
        assert_eq!(count(&requests[1]["messages"], never), 0, "{}", requests[1]);
    }
    // A level of its own: the trigger's nudge is still to come this cycle.
    let m = env.marker(&session);
    assert_eq!(m["state"], "idle", "{m}");
    assert!(m["idle_nudge"]["tokens"].as_u64() >= Some(250_000), "{m}");
    let screen = tui.screen();
    assert!(!screen.contains("reported a problem"), "{screen}");
    // What the user sees and how the client keeps it, for the docs.
    eprintln!("the screen after the Stop nudge:\n{screen}");
    // CTXGUARD_E2E_KEEP=FILE keeps the client's transcript (how fixtures/replay/tui-stop-2.1.330.jsonl
    // was recorded).
    if let Some(keep) = std::env::var_os("CTXGUARD_E2E_KEEP") {
        fs::copy(transcript_of(env, &session), keep).unwrap();
    }
    if let Ok(t) = fs::read_to_string(transcript_of(env, &session)) {
        for line in t.lines().filter(|l| l.contains("ctxguard: 250k")) {
            eprintln!("transcript: {line}");
        }
    }
}

/// A prompt typed while the agent works is queued by the client (2.1.3x-2.1.4x wrote it only
/// as a `queue-operation`); it is an ask all the same: after the next `/compact`, the recovery
/// block the next request carries names it.
#[test]
fn tui_a_prompt_queued_mid_turn_is_in_the_next_recovery() {
    let hooks = [
        ("PreCompact", "precompact"),
        ("SessionStart", "sessionstart"),
    ];
    let script = Script {
        tool_calls: 0,
        context_tokens: 50_000,
        after_compact_tokens: Some(5_000),
        agent: true,
    };
    let Some(rig) = tui_with_hooks(&hooks, script) else {
        return;
    };
    let (tui, api, env) = (&rig.tui, &rig.api, &rig.env);
    tui.submit("SLOW build the parser");
    tui.wait_for("the slow command running", |s| {
        s.contains("sleep 6").then_some(())
    });
    // Typed while the command runs: the client queues it.
    let queued = "also handle unicode names please";
    tui.submit(queued);
    tui.wait_for("the queued prompt reaching the model", |_| {
        conversation(api)
            .iter()
            .any(|r| r["messages"].to_string().contains(queued))
            .then_some(())
    });
    tui.wait_for("the turn's end", |s| {
        (!s.contains("esc to interrupt")).then_some(())
    });
    let runs = |sub: &str| rig.runs(sub).len();
    tui.submit("/compact");
    tui.wait_for("PreCompact and SessionStart(compact)", |_| {
        (runs("precompact") == 1 && runs("sessionstart") >= 2).then_some(())
    });
    let session = find_session(env);
    let cp = env
        .state()
        .join("checkpoints")
        .join(&session)
        .join("_latest.json");
    let cp: Value = serde_json::from_str(&fs::read_to_string(cp).unwrap()).unwrap();
    assert!(cp["asks"].to_string().contains(queued), "{cp}");
    let before = conversation(api).len();
    tui.submit("CHAT what next");
    let requests = tui.wait_for("the next request", |_| {
        let r = conversation(api);
        (r.len() > before).then_some(r)
    });
    let last = requests.last().unwrap();
    assert_eq!(
        count(last, "## ctxguard recovery: compaction #1"),
        1,
        "{last}"
    );
    let block = last["messages"].to_string();
    let at = block.find("## ctxguard recovery").unwrap();
    assert!(block[at..].contains(queued), "{}", &block[at..]);
}

/// The gauge says what will happen in every mode: with auto-compaction off, the window fills
/// (no countdown to a compaction, right under the client's own "Context low"); with idle
/// compaction's threshold raised, the threshold the client uses.
#[test]
fn tui_the_gauge_tells_the_truth_with_compaction_off_and_a_raised_idle_threshold() {
    let script = |tokens| Script {
        tool_calls: 0,
        context_tokens: tokens,
        after_compact_tokens: None,
        agent: true,
    };
    let Some(rig) = tui_with_env(&[], script(960_000), &[("DISABLE_AUTO_COMPACT", "1")]) else {
        return;
    };
    rig.tui.submit("CHAT how full is it");
    let screen = rig.tui.wait_for("the gauge at 960k", |s| {
        s.contains("960k/1M").then(|| s.to_string())
    });
    // Counted to where the client stops accepting requests (977k), not to the window's end.
    assert!(screen.contains("ctx 960k/1M · limit in 17k"), "{screen}");
    assert!(!screen.contains("compacts in"), "{screen}");
    eprintln!("compaction off, the screen:\n{screen}");
    drop(rig);

    let Some(rig) = tui_with_env(
        &[],
        script(550_000),
        &[("CLAUDE_CODE_IDLE_COMPACT_MIN_TOKENS", "500000")],
    ) else {
        return;
    };
    rig.tui.submit("CHAT how full is it");
    let screen = rig.tui.wait_for("the gauge at 550k", |s| {
        s.contains("550k/1M").then(|| s.to_string())
    });
    assert!(
        screen.contains("ctx 55% · 550k/1M · compacts in 417k · idle≥500k"),
        "{screen}"
    );
}

/// Issue 24's session on the default 1M model, in the real 2.1.330 TUI with every nudge route:
/// a text-only turn ends at 300k (past idle compaction's 200k), and the Stop hook asks to save
/// once; the next turn jumps to 940k with a tool call, and the regular nudge still comes, once;
/// that turn's end is not asked again (no 100k of new work since). Each text reaches the model
/// once.
///
/// The status line drawn between the 940k reply's stamp and the end of its request still reports
/// 300k, stamped later than that reply (in about one run in four on a 2-core machine): the routes
/// must read the 940k all the same (`nudge::is_news`), or the regular nudge would wait for the
/// next route, after that turn. No retry: a failure here is that bug back.
#[test]
fn tui_the_idle_nudge_leaves_the_regular_nudge_in_time() {
    let script = Script {
        tool_calls: 1,
        context_tokens: 300_000,
        after_compact_tokens: None,
        agent: true,
    };
    let hooks = [
        ("Stop", "stop"),
        ("PreToolUse", "pretooluse"),
        ("PostToolBatch", "posttoolbatch"),
        ("UserPromptSubmit", "userpromptsubmit"),
    ];
    let Some(rig) = tui_with_hooks(&hooks, script) else {
        return;
    };
    let (tui, api, env) = (&rig.tui, &rig.api, &rig.env);
    let said = |sub: &str| -> Vec<String> {
        rig.runs(sub)
            .into_iter()
            .filter(|o| !o.is_empty())
            .collect()
    };
    tui.submit("CHAT USAGE=300000 sum up the design");
    tui.wait_for("the Stop nudge and the answer to it", |_| {
        (rig.runs("stop").len() >= 2).then_some(())
    });
    assert_eq!(said("stop").len(), 1, "{:?}", rig.runs("stop"));
    tui.wait_for("the turn's end", |s| {
        (!s.contains("esc to interrupt")).then_some(())
    });
    tui.submit("USAGE=940000 now build it");
    let requests = tui.wait_for("the 940k turn and its end", |_| {
        let stops = rig.runs("stop").len();
        let r = conversation(api);
        (stops >= 3 && r.iter().any(|q| q.to_string().contains("USAGE=940000"))).then_some(r)
    });
    sleep(Duration::from_secs(2));
    let requests = if conversation(api).len() > requests.len() {
        conversation(api)
    } else {
        requests
    };
    // One idle nudge, one regular nudge (by whichever route read the reply first), nothing more.
    assert_eq!(said("stop").len(), 1, "{:?}", rig.runs("stop"));
    let regular: Vec<String> = ["pretooluse", "posttoolbatch", "userpromptsubmit"]
        .iter()
        .flat_map(|s| said(s))
        .collect();
    assert_eq!(regular.len(), 1, "{regular:?}");
    assert!(
        regular[0].contains("(940k are in context now)"),
        "{regular:?}"
    );
    let last = requests.last().unwrap();
    assert_eq!(
        count(
            &last["messages"],
            "ctxguard: an hour idle compacts these 300k tokens"
        ),
        1
    );
    assert_eq!(
        count(&last["messages"], "940k are in context now"),
        1,
        "{last}"
    );
    let session = find_session(env);
    let m = env.marker(&session);
    // Nudged (critically: one more reply of that growth reaches the point), never left idle.
    assert!(
        m["state"] == "nudged" || m["state"] == "critical_nudged",
        "{m}"
    );
    assert!(m["idle_nudge"]["tokens"].as_u64() >= Some(300_000), "{m}");
}

/// Issue 37 item 4, on the newest client (2.1.332): what a hook's `systemMessage` and its
/// `hookSpecificOutput.additionalContext` each reach, for every event ctxguard nudges through.
/// A shell hook prints both. `systemMessage` is shown to the user ("<event> says: …") and never
/// sent to the model; `additionalContext` reaches the model for all four, and the TUI shows it
/// too for `Stop` only ("Stop hook says: …", every line of it), `suppressOutput` or not.
/// Recorded in docs/clients.md.
#[test]
fn tui_what_a_hooks_system_message_and_context_each_reach_on_2_1_332() {
    let script = Script {
        tool_calls: 1,
        context_tokens: 50_000,
        after_compact_tokens: None,
        agent: true,
    };
    if !tmux_available() {
        return;
    }
    let Some(client) = client_at("2.1.332") else {
        return;
    };
    let env = TestEnv::new();
    let dir = env.dir.path();
    let project = project_in(&env);
    let hook = dir.join("both.sh");
    // Both fields, and `suppressOutput`; a second Stop (`stop_hook_active`) is quiet.
    fs::write(
        &hook,
        r#"#!/bin/sh
input=$(cat)
case $input in *'"stop_hook_active":true'*) exit 0 ;; esac
printf '{"suppressOutput":true,"systemMessage":"SM-%s","hookSpecificOutput":{"hookEventName":"%s","additionalContext":"AC-%s one\\nAC-%s two"}}' "$1" "$1" "$1" "$1"
"#,
    )
    .unwrap();
    let chmod = Command::new("chmod")
        .arg("755")
        .arg(&hook)
        .status()
        .unwrap();
    assert!(chmod.success());
    let events = ["UserPromptSubmit", "PreToolUse", "PostToolBatch", "Stop"];
    let mut registered = serde_json::Map::new();
    for event in events {
        let line = format!("{} {event}", quote(&hook));
        registered.insert(
            event.to_string(),
            json!([{"matcher": "*", "hooks": [{"type": "command", "command": line}]}]),
        );
    }
    let settings = dir.join("settings.json");
    fs::write(&settings, json!({"hooks": registered}).to_string()).unwrap();
    let api = FakeApi::start_with(dir, script, &[]);
    let tui = start(&client, &env, &project, &settings, api.port);
    tui.wait_for("the prompt", |s| s.contains("❯").then_some(()));
    tui.submit("run one command");
    let (screen, requests) = tui.wait_for("the turn, the Stop hook's and the answer to it", |s| {
        let r = conversation(&api);
        (r.len() >= 3 && s.contains("AC-Stop two") && !s.contains("esc to interrupt"))
            .then(|| (s.to_string(), r))
    });
    let last = requests.last().unwrap();
    for event in events {
        let shown = if event == "PreToolUse" {
            "PreToolUse:Bash says: SM-PreToolUse".to_string()
        } else {
            format!("{event} says: SM-{event}")
        };
        assert!(screen.contains(&shown), "{event}: {screen}");
        assert_eq!(count(last, &format!("SM-{event}")), 0, "{event}: {last}");
        assert_eq!(
            count(&last["messages"], &format!("AC-{event} one")),
            1,
            "{event}"
        );
        let context_shown = screen.contains(&format!("AC-{event} one"));
        assert_eq!(context_shown, event == "Stop", "{event}: {screen}");
    }
    assert!(screen.contains("Stop hook says: AC-Stop one"), "{screen}");
    eprintln!("2.1.332, both fields from every nudge event:\n{screen}");
}

/// Issue 37 item 4: the idle nudge on the newest client (2.1.332), whose TUI shows a Stop hook's
/// context in full: one short line the user reads ("Stop hook says: …", no memory path, no
/// question to repeat), the same text in the model's next request, once.
#[test]
fn tui_the_idle_nudge_is_one_short_line_on_2_1_332() {
    let script = Script {
        tool_calls: 0,
        context_tokens: 250_000,
        after_compact_tokens: None,
        agent: true,
    };
    let Some(rig) = tui_on("2.1.332", &[("Stop", "stop")], script, &[]) else {
        return;
    };
    let (tui, api) = (&rig.tui, &rig.api);
    tui.submit("CHAT sum up the design");
    let said = "ctxguard: an hour idle compacts these 250k tokens.";
    let (screen, requests) = tui.wait_for("the Stop nudge and the answer to it", |s| {
        let r = conversation(api);
        (rig.runs("stop").len() >= 2 && r.len() >= 2 && !s.contains("esc to interrupt"))
            .then(|| (s.to_string(), r))
    });
    let line = screen
        .lines()
        .find(|l| l.contains("Stop hook says: "))
        .unwrap_or_else(|| panic!("{screen}"));
    // The whole text on one line of a 160-column terminal.
    assert!(
        line.contains(said) && line.trim_end().ends_with("start nothing new."),
        "{screen}"
    );
    for never in [".claude/projects", "MEMORY.md", "word for word"] {
        assert!(!screen.contains(never), "{never}: {screen}");
    }
    assert_eq!(count(&requests[1]["messages"], said), 1, "{}", requests[1]);
    assert_eq!(count(&requests[0]["messages"], said), 0);
    eprintln!("2.1.332, the idle nudge:\n{screen}");
}

/// Issue 37 item 1, on the newest client (2.1.332): claude-sonnet-4-5 at 189k of 200k, a model
/// the client compacts only when a request no longer fits. The client's indicator reads "100%
/// context used"; the gauge beside it shows no count of tokens left.
#[test]
fn tui_no_count_beside_the_clients_100_percent_on_2_1_332() {
    let script = Script {
        tool_calls: 0,
        context_tokens: 189_000,
        after_compact_tokens: None,
        agent: true,
    };
    let vars = [("ANTHROPIC_MODEL", "claude-sonnet-4-5-20250929")];
    let Some(rig) = tui_on("2.1.332", &[], script, &vars) else {
        return;
    };
    rig.tui.submit("CHAT how full is it");
    let screen = rig
        .tui
        .wait_for("the gauge at 189k and the client's indicator", |s| {
            (s.contains("189k/200k") && s.contains("context used")).then(|| s.to_string())
        });
    assert!(screen.contains("100% context used"), "{screen}");
    assert!(
        screen.contains("ctx 189k/200k · compacts when full"),
        "{screen}"
    );
    assert!(!screen.contains("full in"), "{screen}");
    eprintln!("2.1.332, claude-sonnet-4-5 at 189k:\n{screen}");
}

/// Issue 41 in the real 2.1.332 TUI, auto-compaction off, a 200k model: the nudge at 150k says
/// what `/clear` will do; the user's `/clear` starts a new session whose model gets the cleared
/// session's whole recovery block, once; a `/clear` of that session (low usage, no nudge) gets
/// the one-line pointer only.
#[test]
fn tui_the_soft_restart_after_the_nudge_on_2_1_332() {
    let script = Script {
        tool_calls: 2,
        context_tokens: 20_000,
        after_compact_tokens: None,
        agent: true,
    };
    let hooks = [
        ("PreToolUse", "pretooluse"),
        ("SessionStart", "sessionstart"),
        ("SessionEnd", "sessionend"),
    ];
    let vars = [
        ("ANTHROPIC_MODEL", "claude-sonnet-4-5-20250929"),
        ("DISABLE_AUTO_COMPACT", "1"),
    ];
    let Some(rig) = tui_on("2.1.332", &hooks, script, &vars) else {
        return;
    };
    const CLEARED: &str =
        "SessionStart hook additional context: ## ctxguard recovery: the work before /clear";
    const POINTER: &str = "SessionStart hook additional context: ctxguard: the previous session";
    // A text answer at 150k arms the marker (the status line); the next tool call nudges.
    rig.tui.submit("CHAT USAGE=150000 work on the parser");
    rig.tui.wait_for("the gauge at 150k", |s| {
        s.contains("150k/200k").then_some(())
    });
    rig.tui.submit("USAGE=150000 run the tests");
    let screen = rig.tui.wait_for("the nudge's trace", |s| {
        s.contains("asked to save").then(|| s.to_string())
    });
    assert!(screen.contains("limit in 27k"), "{screen}");
    // The gauge shows the nudge's trace once the hook ran; the request that carries its
    // context may reach the stand-in a moment later (on a loaded machine, after the screen).
    let text = rig.tui.wait_for("the request with the nudge", |_| {
        conversation(&rig.api)
            .into_iter()
            .map(|r| r.to_string())
            .find(|r| r.contains("hook additional context: ctxguard"))
    });
    assert!(
        text.contains("before Claude Code stops accepting requests, at 177k tokens"),
        "{text}"
    );
    assert!(text.contains("/clear starts a fresh context"), "{text}");

    rig.tui.submit("/clear");
    rig.tui.wait_for("the new session's start", |_| {
        rig.runs("sessionstart")
            .iter()
            .any(|out| out.contains("the work before /clear"))
            .then_some(())
    });
    rig.tui.submit("CHAT where were we");
    let first = rig.tui.wait_for("the first request after /clear", |_| {
        conversation(&rig.api)
            .into_iter()
            .find(|r| r.to_string().contains("CHAT where were we"))
    });
    assert_eq!(count(&first, CLEARED), 1, "{first}");
    assert!(
        first
            .to_string()
            .contains("USAGE=150000 work on the parser"),
        "{first}"
    );
    assert_eq!(count(&first, POINTER), 0, "{first}");

    // That session had no nudge: its /clear gives the pointer only.
    rig.tui.submit("/clear");
    rig.tui.wait_for("the pointer", |_| {
        rig.runs("sessionstart")
            .iter()
            .any(|out| out.contains("ctxguard: the previous session"))
            .then_some(())
    });
    rig.tui.submit("CHAT hello again");
    let next = rig
        .tui
        .wait_for("the first request after the second /clear", |_| {
            conversation(&rig.api)
                .into_iter()
                .find(|r| r.to_string().contains("CHAT hello again"))
        });
    assert_eq!(count(&next, POINTER), 1, "{next}");
    assert_eq!(count(&next, "ctxguard recovery"), 0, "{next}");
}
