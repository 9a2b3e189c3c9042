use serde_json::json;

use super::*;
use crate::commands::doctor::tests::ctx;

const KEY_FILE: &str = "/h/.codex/hooks.json";

/// The findings as lines, paths with forward slashes (Windows joins with `\\`).
fn lines(findings: &[Finding]) -> Vec<String> {
    crate::commands::doctor::tests::lines(findings)
        .into_iter()
        .map(|l| l.replace('\\', "/"))
        .collect()
}

fn entry(sub: &str) -> Value {
    json!([{"hooks": [{"type": "command", "command": format!("/bin/ctxguard {sub}")}]}])
}

/// hooks.json with ctxguard's hooks for these (event, subcommand) pairs.
fn hooks_json(pairs: &[(&str, &str)]) -> Value {
    let mut hooks = serde_json::Map::new();
    for (event, sub) in pairs {
        hooks.insert((*event).to_string(), entry(sub));
    }
    json!({ "hooks": hooks })
}

fn all() -> Value {
    hooks_json(&[
        ("SessionStart", "sessionstart"),
        ("UserPromptSubmit", "userpromptsubmit"),
        ("PreToolUse", "pretooluse"),
        ("PreCompact", "precompact"),
        ("SessionEnd", "sessionend"),
    ])
}

/// The config.toml that trusts each of `doc`'s handlers as it is now.
fn trusting(doc: &Value) -> String {
    let mut config = DocumentMut::new();
    for h in hooks::handlers(doc) {
        hooks::set_trusted(&mut config, &h.at.key(KEY_FILE), &h.hash.unwrap()).unwrap();
    }
    config.to_string()
}

fn with(hooks: Option<Value>, config: Option<&str>) -> Context {
    let mut c = ctx(&[]);
    c.codex = Some(Setup {
        home: PathBuf::from("/h/.codex"),
        key_file: KEY_FILE.into(),
        hooks: Ok(hooks),
        config: Ok(config.map(str::to_string)),
    });
    c
}

#[test]
fn without_codex_nothing_is_said() {
    let mut c = ctx(&[]);
    assert!(hooks(&c).is_empty() && compaction(&c).is_empty());
    // Unless asked for (`doctor --client codex`).
    c.codex_home = Some(PathBuf::from("/h/.codex"));
    assert_eq!(
        lines(&present(&c)),
        ["fail: no Codex directory at /h/.codex"]
    );
    assert!(present(&with(None, None)).is_empty());
}

#[test]
fn not_registered_is_only_information() {
    assert_eq!(
        lines(&hooks(&with(None, None))),
        ["info: ctxguard is not registered with Codex CLI (/h/.codex/hooks.json has none of its hooks)"]
    );
    assert_eq!(hooks_required(&with(None, None))[0].status, Status::Fail);
    let theirs =
        json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]}});
    assert_eq!(hooks(&with(Some(theirs), None))[0].status, Status::Info);
}

#[test]
fn registered_and_trusted_or_which_are_not() {
    let doc = all();
    let trusted = trusting(&doc);
    assert_eq!(
        lines(&hooks(&with(Some(doc.clone()), Some(&trusted)))),
        ["ok: Codex runs ctxguard's 5 hooks from /h/.codex/hooks.json, each trusted"]
    );
    // Untrusted: no config at all.
    let f = hooks(&with(Some(doc.clone()), None));
    assert_eq!(
        lines(&f),
        ["fail: Codex skips ctxguard's SessionStart (not trusted), UserPromptSubmit (not trusted), \
          PreToolUse (not trusted), PreCompact (not trusted), SessionEnd (not trusted): it runs a \
          hook of hooks.json only once trusted"]
    );
    assert!(f[0].fix.as_deref().unwrap().contains("/hooks"));
    assert!(f[0].fix.as_deref().unwrap().contains("--trust"));
    // One changed since it was trusted, one turned off.
    let mut changed = doc.clone();
    changed["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"] = json!(5);
    let config = trusting(&doc).replace(
        &format!("[hooks.state.\"{KEY_FILE}:session_end:0:0\"]\n"),
        &format!("[hooks.state.\"{KEY_FILE}:session_end:0:0\"]\nenabled = false\n"),
    );
    assert_eq!(
        lines(&hooks(&with(Some(changed), Some(&config)))),
        [
            "fail: Codex skips ctxguard's PreToolUse (changed since it was trusted), SessionEnd \
          (turned off (enabled = false)): it runs a hook of hooks.json only once trusted"
        ]
    );
}

#[test]
fn missing_and_doubled_hooks_are_named() {
    let mut doc = hooks_json(&[
        ("SessionStart", "sessionstart"),
        ("PreToolUse", "pretooluse"),
    ]);
    doc["hooks"]["PreToolUse"]
        .as_array_mut()
        .unwrap()
        .extend(entry("pretooluse").as_array().unwrap().clone());
    let trusted = trusting(&doc);
    let out = lines(&hooks(&with(Some(doc), Some(&trusted))));
    assert_eq!(
        out,
        [
            "warn: PreToolUse runs `ctxguard pretooluse` 2 times in /h/.codex/hooks.json",
            "fail: /h/.codex/hooks.json lacks UserPromptSubmit (`ctxguard userpromptsubmit`), \
             PreCompact (`ctxguard precompact`), SessionEnd (`ctxguard sessionend`)",
            "ok: Codex runs ctxguard's 2 hooks from /h/.codex/hooks.json, each trusted",
        ]
    );
}

#[test]
fn unreadable_files_and_hooks_in_config_toml_too() {
    let mut c = with(None, None);
    c.codex.as_mut().unwrap().hooks = Err("/h/.codex/hooks.json is not valid JSON (x)".into());
    assert_eq!(
        lines(&hooks(&c)),
        ["fail: /h/.codex/hooks.json is not valid JSON (x): Codex cannot read it either"]
    );
    let f = hooks(&with(Some(all()), Some("not = [toml")));
    assert_eq!(f[0].status, Status::Fail, "{:?}", lines(&f));
    let config = "[[hooks.PreToolUse]]\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"ctxguard pretooluse\"\n";
    let f = lines(&hooks(&with(Some(all()), Some(config))));
    assert_eq!(
        f.last().unwrap(),
        "warn: /h/.codex/config.toml registers ctxguard under [hooks] too (PreToolUse): Codex \
         loads both it and hooks.json, so those hooks run twice"
    );
}

#[test]
fn compaction_as_config_toml_sets_it() {
    // The first line; the second says what ctxguard cannot do on Codex, whatever the config.
    let all = |config: Option<&str>| lines(&compaction(&with(None, config)));
    let say = |config: Option<&str>| all(config)[..1].to_vec();
    let limits = all(None);
    assert_eq!(limits.len(), 2);
    assert!(
        limits[1].contains("can be neither steered nor kept"),
        "{limits:?}"
    );
    assert_eq!(
        say(None),
        ["info: no /h/.codex/config.toml: Codex compacts at 90% of the model's window"]
    );
    // The window Codex counts against is 95% of the configured one (what every command shows);
    // each number is named beside the setting it comes from.
    assert_eq!(
        say(Some(
            "model_context_window = 100000\nmodel_auto_compact_token_limit = 20000\n"
        )),
        [
            "info: Codex counts the context against 95k tokens, 95% of the 100k-token window \
             (model_context_window in /h/.codex/config.toml), and compacts at 20k \
             (model_auto_compact_token_limit in /h/.codex/config.toml)"
        ]
    );
    assert_eq!(
        say(Some(
            "model_context_window = 100000\nmodel_auto_compact_token_limit = 95000\n"
        )),
        [
            "info: Codex counts the context against 95k tokens, 95% of the 100k-token window \
          (model_context_window in /h/.codex/config.toml), and compacts at 90k, 90% of the \
          window: model_auto_compact_token_limit in /h/.codex/config.toml asks for 95k and Codex \
          caps it"
        ]
    );
    assert_eq!(
        say(Some("model_context_window = 200000\n")),
        [
            "info: Codex counts the context against 190k tokens, 95% of the 200k-token window \
             (model_context_window in /h/.codex/config.toml), and compacts at 180k, 90% of the \
             window"
        ]
    );
    assert_eq!(
        say(Some("model_auto_compact_token_limit = 20000\n")),
        [
            "info: Codex compacts at 20k tokens (model_auto_compact_token_limit in \
          /h/.codex/config.toml), or at 90% of the model's window if that is less"
        ]
    );
}
