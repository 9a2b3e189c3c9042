//! `replay` on Codex rollouts: a rollout written by hand in the exact 0.169.0 line format
//! (fixtures/codex/replay/, see its README) and the real excerpts of fixtures/codex, replayed
//! by the real binary with Codex's limits (its default, or what a temporary `config.toml` sets);
//! `replay --all` over `$CODEX_HOME/sessions` beside Claude Code's projects.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::*;

/// The rollout of one `codex` turn: 15 tool calls growing to 247,000 tokens of a 272k model
/// (reported as 258,400), then Codex's own auto-compaction mid-turn, the recovery block, and
/// the turn's last reply.
const ROLLOUT: &str =
    "codex/replay/rollout-2026-11-25T17-40-00-01a213c0-5e1d-7a42-9b3c-2f0d81e4c7a9.jsonl";
/// A Claude Code session with an automatic compaction (see tests/replay.rs).
const CLAUDE: &str = "replay/spotter-4d5611e5-auto-compaction.jsonl";

/// A fixture of the tree, else an excerpt of a published session in `../shared` (under the path
/// it had in the tree); the tests on those check [`published`] first.
fn fixture_path(name: &str) -> PathBuf {
    let own = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name);
    if own.exists() {
        return own;
    }
    shared_root().join("from-project/fixtures").join(name)
}

/// Are the excerpts of published sessions there (`../shared`)? Says so in one line if not.
fn published() -> bool {
    [CLAUDE]
        .iter()
        .all(|name| shared(&format!("from-project/fixtures/{name}")).is_some())
}

/// A test environment whose Codex home is `CODEX_HOME` under it (nothing of the developer's
/// own), with `config` as its `config.toml` when given.
fn codex_env(config: Option<&str>) -> (TestEnv, PathBuf) {
    let mut env = TestEnv::new();
    let codex_home = env.dir.path().join("codex-home");
    fs::create_dir_all(&codex_home).unwrap();
    if let Some(config) = config {
        fs::write(codex_home.join("config.toml"), config).unwrap();
    }
    env.set("CODEX_HOME", codex_home.to_str().unwrap());
    (env, codex_home)
}

fn replay_json(env: &TestEnv, path: &Path) -> Value {
    let run = env.run(&["replay", path.to_str().unwrap(), "--json"], "");
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
    serde_json::from_str(&run.stdout).unwrap()
}

fn verdicts(report: &Value) -> Vec<String> {
    report["cycles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["verdict"].as_str().unwrap().to_string())
        .collect()
}

/// Each event as `kind tokens by`.
fn timeline(report: &Value) -> Vec<String> {
    report["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let kind = match (e["kind"].as_str().unwrap(), e["level"].as_str()) {
                ("nudge", Some("critical")) => "critical".to_string(),
                ("compaction", _) => format!("{} compaction", e["trigger"].as_str().unwrap()),
                (kind, _) => kind.to_string(),
            };
            format!("{kind} {} {}", e["tokens"], e["by"].as_str().unwrap_or("-"))
        })
        .collect()
}

/// On Codex's default (90% of the model's window: 244,800 of 272k), the tool call of the reply
/// that crossed the trigger (204,800) is nudged, the critical nudge follows, and four replies
/// later Codex compacts in the middle of the turn: in time.
#[test]
fn a_rollout_nudged_before_codexs_own_compaction() {
    let (env, _) = codex_env(None);
    let report = replay_json(&env, &fixture_path(ROLLOUT));
    assert_eq!(report["client"], "codex");
    assert_eq!(report["statusline"], false);
    assert_eq!(report["model"], "gpt-5.1-codex");
    assert_eq!(report["window_source"], "rollout");
    assert_eq!(report["compact_source"], "codex_default");
    assert_eq!(
        (
            &report["limits"]["window"],
            &report["limits"]["trigger_at"],
            &report["limits"]["compact_at"]
        ),
        (&258_400.into(), &204_800.into(), &244_800.into())
    );
    assert_eq!(
        timeline(&report),
        [
            "armed 207500 pretooluse",
            "nudge 207500 pretooluse",
            "critical 231000 pretooluse",
            "auto compaction 247000 -",
        ]
    );
    assert_eq!(verdicts(&report), ["in_time", "quiet"]);
    let first = &report["cycles"][0];
    // One reply per response (its usage is written twice), the compaction's own request none.
    assert_eq!(
        (&first["replies"], &report["replies"]),
        (&15.into(), &16.into())
    );
    assert_eq!(first["nudge"]["replies_left"], 4);
    assert_eq!(first["compaction"]["trigger"], "auto");
    assert_eq!(first["compaction"]["pre_tokens"], Value::Null);

    // The text report names the client and reads the same.
    let run = env.run(&["replay", fixture_path(ROLLOUT).to_str().unwrap()], "");
    assert_eq!(run.code, 0, "{run:?}");
    for expected in [
        "\nclient       Codex\n",
        "\nmode         no status line (Codex has none): the hooks read the rollout\n",
        "\nwindow       258,400 (reported by Codex in its rollout (model_context_window)); model \
         gpt-5.1-codex\n",
        "(compaction point: 90% of the model's window (Codex's default))",
        "reply 11   nudge       207,500 tokens, 37,300 before compaction (PreToolUse)",
        "compaction  auto (last reply 247,000)",
        "    1  in time           15   247,000  207,500 (4 left)            auto\n",
    ] {
        assert!(run.stdout.contains(expected), "{expected}\n{}", run.stdout);
    }
    let text = run
        .stdout
        .replace(&fixture_path(ROLLOUT).display().to_string(), "PATH");
    assert!(text.is_ascii());
    assert!(text.lines().all(|l| l.len() <= 100), "{text}");
}

/// `model_auto_compact_token_limit` in `$CODEX_HOME/config.toml` moves every threshold: the
/// nudge comes at the first reply past 110,000 (the limit less the 40,000 headroom), the
/// critical one at the next (one more reply like the last would pass 150,000), long before
/// Codex compacts; `--statusline` changes nothing (Codex has none).
#[test]
fn codexs_config_toml_sets_the_compaction_point() {
    let (env, codex_home) = codex_env(Some("model_auto_compact_token_limit = 150000\n"));
    let report = replay_json(&env, &fixture_path(ROLLOUT));
    assert_eq!(report["limits"]["compact_at"], 150_000);
    assert_eq!(
        report["compact_source"]["setting"],
        format!(
            "model_auto_compact_token_limit in {}",
            codex_home.join("config.toml").display()
        )
    );
    assert_eq!(
        timeline(&report)[..3],
        [
            "armed 110000 pretooluse",
            "nudge 110000 pretooluse",
            "critical 131000 pretooluse",
        ]
    );
    assert_eq!(verdicts(&report), ["in_time", "quiet"]);
    let path = fixture_path(ROLLOUT);
    let run = env.run(
        &["replay", path.to_str().unwrap(), "--statusline", "--json"],
        "",
    );
    let with: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(with["statusline"], false);
    assert_eq!(with["events"], report["events"]);
}

/// The real 0.169.0 excerpts, recorded with a 20,000 limit: a reply jumping from nothing to
/// 50,050 tokens. Mid-turn, its tool call is not nudged, as the hook does not nudge it: it is
/// already past the limit, and Codex compacts once the call has run, before the model could
/// act on a nudge. Before a turn, the reply had no tool call and the next prompt came after
/// the compaction. Both missed: nothing ever crossed the trigger before the limit.
#[test]
fn the_recorded_excerpts_on_their_own_limit() {
    let (env, _) = codex_env(Some(
        "model_context_window = 100000\nmodel_auto_compact_token_limit = 20000\n",
    ));
    let mid = replay_json(
        &env,
        &fixture_path("codex/rollout-excerpt-mid-turn-compaction.jsonl"),
    );
    assert_eq!(
        timeline(&mid),
        ["armed 50050 pretooluse", "auto compaction 50050 -",]
    );
    assert_eq!(verdicts(&mid), ["missed", "quiet"]);
    let pre = replay_json(
        &env,
        &fixture_path("codex/rollout-excerpt-pre-turn-compaction.jsonl"),
    );
    assert_eq!(timeline(&pre), ["auto compaction 50050 -"]);
    assert_eq!(verdicts(&pre)[0], "missed");
}

/// A rollout copied under another name is still read as one (its first line is a
/// `session_meta`).
#[test]
fn a_renamed_rollout_is_still_codexs() {
    let (env, _) = codex_env(None);
    let copy = env.dir.path().join("session.jsonl");
    fs::write(&copy, fs::read(fixture_path(ROLLOUT)).unwrap()).unwrap();
    let report = replay_json(&env, &copy);
    assert_eq!(report["client"], "codex");
    assert_eq!(verdicts(&report), ["in_time", "quiet"]);
}

fn put_rollout(codex_home: &Path, day: &str) -> PathBuf {
    let folder = codex_home.join("sessions").join(day);
    fs::create_dir_all(&folder).unwrap();
    let name = Path::new(ROLLOUT).file_name().unwrap();
    let path = folder.join(name);
    fs::write(&path, fs::read(fixture_path(ROLLOUT)).unwrap()).unwrap();
    path
}

/// `replay --all` takes Codex's sessions beside Claude Code's, each named with its client; a
/// user with only Codex gets its sessions; `--project` matches a rollout's directory.
#[test]
fn replay_all_takes_codexs_sessions_too() {
    if !published() {
        return;
    }
    let (env, codex_home) = codex_env(None);
    let project = env.home().join(".claude/projects/-home-u-app");
    fs::create_dir_all(&project).unwrap();
    fs::write(
        project.join("s1.jsonl"),
        fs::read(fixture_path(CLAUDE)).unwrap(),
    )
    .unwrap();
    put_rollout(&codex_home, "2026/11/25");
    let run = env.run(&["replay", "--all"], "");
    assert_eq!(run.code, 0, "{run:?}");
    let codex_line = format!(
        "Codex: 2026/11/25/{}  16 replies, 1 compaction (recovery 190 characters): in time, \
         quiet",
        Path::new(ROLLOUT).file_name().unwrap().to_str().unwrap()
    );
    assert!(
        run.stdout.lines().any(|l| l == codex_line),
        "{codex_line}\n{}",
        run.stdout
    );
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("-home-u-app/s1.jsonl  ")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("\n2 sessions (1 of Codex), "),
        "{}",
        run.stdout
    );
    assert_eq!(
        run.stderr.matches("replaying ").count(),
        2,
        "{}",
        run.stderr
    );

    let run = env.run(&["replay", "--all", "--json"], "");
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    let codex = v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["client"] == "codex")
        .unwrap();
    assert_eq!(codex["project"], "-home-user-tokenizer");
    assert_eq!(codex["verdicts"], serde_json::json!(["in_time", "quiet"]));

    // --project by the rollout's directory, as a path or a part of its folder name.
    for p in ["/home/user/tokenizer", "tokenizer"] {
        let run = env.run(&["replay", "--all", "--project", p], "");
        assert_eq!(run.code, 0, "{run:?}");
        assert!(
            run.stdout.contains("\n1 session (1 of Codex), "),
            "{p}: {}",
            run.stdout
        );
    }

    // Only Codex: its sessions, no error.
    fs::remove_dir_all(env.home().join(".claude")).unwrap();
    let run = env.run(&["replay", "--all"], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains(&codex_line), "{}", run.stdout);
    // Neither: the error names both folders.
    fs::remove_dir_all(codex_home.join("sessions")).unwrap();
    let run = env.run(&["replay", "--all"], "");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("no session transcript under"),
        "{run:?}"
    );
    assert!(run.stderr.contains("sessions"), "{run:?}");
}

/// Without `CODEX_HOME`, Codex's folder is `~/.codex`; a user without one sees only Claude Code's
/// sessions, with no error.
#[test]
fn replay_all_finds_dot_codex_and_does_without_it() {
    if !published() {
        return;
    }
    let env = TestEnv::new();
    let project = env.home().join(".claude/projects/-home-u-app");
    fs::create_dir_all(&project).unwrap();
    fs::write(
        project.join("s1.jsonl"),
        fs::read(fixture_path(CLAUDE)).unwrap(),
    )
    .unwrap();
    let run_all = || {
        let mut cmd = env.command(&["replay", "--all"]);
        cmd.env_remove("CODEX_HOME");
        let out = cmd.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stdout, stderr) = run_all();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("\n1 session, "), "{stdout}");
    assert!(
        !stdout.contains("Codex") && !stderr.contains("Codex"),
        "{stdout}{stderr}"
    );
    put_rollout(&env.home().join(".codex"), "2026/11/25");
    let (code, stdout, stderr) = run_all();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("\n2 sessions (1 of Codex), "), "{stdout}");
}
