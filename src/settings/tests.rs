//! Tests of `src/settings/mod.rs`: install and uninstall on literal settings.

use super::*;

const BIN: &str = "/home/u/.local/bin/ctxguard";

fn none(_: &str) -> bool {
    false
}

fn their_settings() -> Value {
    serde_json::from_str(
        r#"{
  "model": "opus",
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/guard.sh"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
  },
  "statusLine": {"type": "command", "command": "~/.claude/statusline.sh --fancy", "padding": 0},
  "env": {"FOO": "1"}
}"#,
    )
    .unwrap()
}

fn install(s: &mut Value, bin: &str, mode: StatusLineMode) -> Edit {
    super::install(s, bin, &none, mode, Accepts::ALL).unwrap()
}

fn uninstall(s: &mut Value, replaced: Option<&Value>) -> Edit {
    super::uninstall(s, BIN, &none, replaced).unwrap()
}

/// The rendered text, so that key order counts (Value equality ignores it).
fn text(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap()
}

#[test]
fn install_keeps_everything_else_in_order_and_is_idempotent() {
    let mut s = their_settings();
    let edit = install(&mut s, BIN, StatusLineMode::Wrap);
    assert_eq!(edit.changes.len(), hook_events().count() + 1, "{edit:?}");
    assert_eq!(edit.note, Note::Keep);
    let keys: Vec<&String> = s.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["model", "hooks", "statusLine", "env"]);
    let hook_keys: Vec<&String> = s["hooks"].as_object().unwrap().keys().collect();
    // The user's own events stay first, in their order; ours follow in registry order.
    let mut expected = vec!["PreToolUse", "Stop"];
    expected.extend(
        hook_events()
            .map(|(e, _, _)| e)
            .filter(|e| *e != "PreToolUse" && *e != "Stop"),
    );
    assert_eq!(hook_keys, expected);
    // Theirs first, ours appended.
    assert_eq!(
        s["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        "~/guard.sh"
    );
    assert_eq!(s["hooks"]["PreToolUse"][1]["matcher"], "*");
    assert_eq!(
        s["hooks"]["PreToolUse"][1]["hooks"][0],
        json!({"type": "command", "command": BIN, "args": ["pretooluse"], "onFailure": "continue"})
    );
    assert_eq!(s["hooks"]["PreCompact"][0]["matcher"], "auto|manual");
    assert!(s["hooks"]["SessionStart"][0].get("matcher").is_none());
    assert_eq!(
        s["statusLine"]["command"],
        format!("{BIN} statusline --then '~/.claude/statusline.sh --fancy'")
    );
    assert_eq!(s["statusLine"]["padding"], 0);
    let once = text(&s);
    assert_eq!(install(&mut s, BIN, StatusLineMode::Wrap), Edit::default());
    assert_eq!(text(&s), once);
    // A moved binary is updated in place, not added twice, and the status line is not
    // wrapped again.
    let edit = install(&mut s, "/opt/ctxguard", StatusLineMode::Wrap);
    assert_eq!(edit.changes.len(), hook_events().count() + 1, "{edit:?}");
    assert_eq!(s["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
    assert_eq!(
        s["statusLine"]["command"],
        "/opt/ctxguard statusline --then '~/.claude/statusline.sh --fancy'"
    );
}

#[test]
fn entries_are_recognised_whatever_the_binary_is_called() {
    for bin in [
        "/x/ctxguard-0.1.0",
        "/x/ctxguard-bin",
        "/opt/cg",
        "/my dir/ctxguard",
    ] {
        let mut s = their_settings();
        install(&mut s, bin, StatusLineMode::Wrap);
        let once = text(&s);
        for mode in [StatusLineMode::Wrap, StatusLineMode::Replace] {
            assert_eq!(install(&mut s, bin, mode), Edit::default(), "{bin}");
        }
        assert_eq!(text(&s), once, "{bin}");
        let edit = super::uninstall(&mut s, bin, &none, None).unwrap();
        assert_eq!(
            edit.changes.len(),
            hook_events().count() + 1,
            "{bin}: {edit:?}"
        );
        assert_eq!(text(&s), text(&their_settings()), "{bin}");
    }
    // A link to the binary counts as the binary.
    let mut s = json!({"hooks": {"PreCompact": [{"hooks": [
            {"type": "command", "command": "/usr/bin/cg-link precompact"}]}]}});
    super::install(
        &mut s,
        "/opt/cg",
        &|p| p == "/usr/bin/cg-link",
        StatusLineMode::Skip,
        Accepts::ALL,
    )
    .unwrap();
    assert_eq!(
        s["hooks"]["PreCompact"],
        json!([{"hooks": [{"type": "command", "command": "/opt/cg", "args": ["precompact"], "onFailure": "continue"}]}])
    );
}

#[test]
fn duplicates_and_nested_wraps_from_older_installs_are_cleaned_up() {
    let hook = |cmd: &str| json!({"matcher": "*", "hooks": [{"type": "command", "command": cmd}]});
    let nested = format!(
        "/x/ctxguard-0.1.0 statusline --then {}",
        shell_quote("/x/ctxguard-0.1.0 statusline --then 'printf mine'")
    );
    let mut s = json!({
        "hooks": {"PreToolUse": [
            hook("/x/ctxguard-0.1.0 pretooluse"),
            hook("mine.sh"),
            hook("/x/ctxguard-0.1.0 pretooluse"),
            {"hooks": [{"type": "command", "command": "a.sh"},
                       {"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/hooks/run.sh pretooluse"}]}
        ]},
        "statusLine": {"type": "command", "command": nested}
    });
    install(&mut s, BIN, StatusLineMode::Wrap);
    assert_eq!(
        s["hooks"]["PreToolUse"],
        json!([{"matcher": "*", "hooks": [{"type": "command", "command": BIN, "args": ["pretooluse"], "onFailure": "continue"}]},
                   hook("mine.sh"),
                   {"hooks": [{"type": "command", "command": "a.sh"}]}])
    );
    assert_eq!(
        s["statusLine"]["command"],
        format!("{BIN} statusline --then 'printf mine'")
    );
    // And uninstall sees through the nesting too.
    let mut s = json!({"statusLine": {"type": "command", "command": nested}});
    uninstall(&mut s, None);
    assert_eq!(
        s,
        json!({"statusLine": {"type": "command", "command": "printf mine"}})
    );
}

#[test]
fn shell_lines_of_an_earlier_version_become_the_exec_form_in_place() {
    let mut s = json!({"hooks": {
        "PreToolUse": [{"matcher": "*", "hooks": [
            {"type": "command", "command": "'/old dir/ctxguard' pretooluse", "timeout": 5}]}],
        "PreCompact": [{"matcher": "auto|manual", "hooks": [
            {"type": "command", "command": "ctxguard precompact"}]}],
        "SessionStart": [{"hooks": [
            {"type": "command", "command": "\"$HOME/bin/ctxguard\" sessionstart --x 'a b'"}]}],
        "UserPromptSubmit": [{"hooks": [
            {"type": "command", "command": "/old/ctxguard userpromptsubmit 2>>/tmp/log"}]}]
    }});
    let edit = install(&mut s, BIN, StatusLineMode::Skip);
    let hooks = &s["hooks"];
    // In place, every other key kept in its order, `args` after `command`.
    assert_eq!(
        text(&hooks["PreToolUse"][0]["hooks"][0]),
        text(
            &json!({"type": "command", "command": BIN, "args": ["pretooluse"], "timeout": 5, "onFailure": "continue"})
        )
    );
    assert_eq!(
        hooks["PreCompact"][0]["hooks"][0],
        json!({"type": "command", "command": BIN, "args": ["precompact"], "onFailure": "continue"})
    );
    // The arguments are kept, as the shell passed them.
    assert_eq!(
        hooks["SessionStart"][0]["hooks"][0]["args"],
        json!(["sessionstart", "--x", "a b"])
    );
    // A line that needs its shell stays one, pointed at this binary, and says why.
    assert_eq!(
        hooks["UserPromptSubmit"][0]["hooks"][0],
        json!({"type": "command", "command": format!("{BIN} userpromptsubmit 2>>/tmp/log"),
               "onFailure": "continue"})
    );
    assert_eq!(edit.notices.len(), 1, "{edit:?}");
    assert!(
        edit.notices[0].starts_with("UserPromptSubmit: `/old/ctxguard userpromptsubmit"),
        "{edit:?}"
    );
    assert_eq!(
        edit.changes[0],
        format!(
            "PreToolUse: the shell line `'/old dir/ctxguard' pretooluse` became the exec form \
             `{BIN} pretooluse`"
        )
    );
    // Once upgraded, installing again changes nothing; uninstall removes both forms.
    let once = text(&s);
    assert!(install(&mut s, BIN, StatusLineMode::Skip)
        .changes
        .is_empty());
    assert_eq!(text(&s), once);
    let edit = uninstall(&mut s, None);
    assert_eq!(edit.changes.len(), hook_events().count(), "{edit:?}");
    assert_eq!(s, json!({}));
}

#[test]
fn exec_form_entries_are_recognised_by_what_they_run() {
    let mut s = json!({"hooks": {"PreToolUse": [
        {"hooks": [{"type": "command", "command": "/x/ctxguard-0.1.0", "args": ["pretooluse"]}]},
        {"hooks": [{"type": "command", "command": "/x/ctxguard", "args": ["pretooluse"]}]},
        {"hooks": [{"type": "command", "command": "/x/ctxguard", "args": ["status"]}]},
        {"hooks": [{"type": "command", "command": "/x/ctxguard", "args": "pretooluse"}]},
        {"hooks": [{"type": "command", "command": r"C:\Users\u\.local\bin\ctxguard.exe",
                    "args": ["pretooluse"]}]}
    ]}});
    let edit = install(&mut s, BIN, StatusLineMode::Skip);
    let pre = s["hooks"]["PreToolUse"].as_array().unwrap();
    // The first is pointed at this binary, the other two copies removed; what does not run
    // a hook subcommand (or is not a valid entry) is left alone.
    assert_eq!(pre.len(), 3, "{pre:?}");
    assert_eq!(
        pre[0]["hooks"][0],
        json!({"type": "command", "command": BIN, "args": ["pretooluse"], "onFailure": "continue"})
    );
    assert_eq!(pre[1]["hooks"][0]["args"], json!(["status"]));
    assert_eq!(pre[2]["hooks"][0]["args"], json!("pretooluse"));
    assert_eq!(
        edit.changes
            .iter()
            .filter(|c| c.starts_with("PreToolUse: removed the duplicate"))
            .count(),
        2,
        "{edit:?}"
    );
}

#[test]
fn statusline_modes() {
    let mut s = their_settings();
    install(&mut s, BIN, StatusLineMode::Skip);
    assert_eq!(
        s["statusLine"]["command"],
        "~/.claude/statusline.sh --fancy"
    );
    let mut s = their_settings();
    let edit = install(&mut s, BIN, StatusLineMode::Replace);
    assert_eq!(s["statusLine"]["command"], format!("{BIN} statusline"));
    assert_eq!(
        edit.note,
        Note::Save(their_settings()["statusLine"].clone())
    );
    let mut empty = json!({});
    let edit = install(&mut empty, "/a b/ctxguard", StatusLineMode::Wrap);
    assert_eq!(
        empty["statusLine"],
        json!({"type": "command", "command": "'/a b/ctxguard' statusline"})
    );
    assert_eq!(edit.note, Note::Remove, "an older note no longer applies");
    let mut empty = json!({});
    install(&mut empty, BIN, StatusLineMode::Skip);
    assert!(empty.get("statusLine").is_none());
}

#[test]
fn uninstall_removes_exactly_what_install_added() {
    for mode in [
        StatusLineMode::Wrap,
        StatusLineMode::Replace,
        StatusLineMode::Skip,
    ] {
        let original = their_settings();
        let mut s = original.clone();
        let note = match install(&mut s, BIN, mode).note {
            Note::Save(v) => Some(v),
            _ => None,
        };
        let edit = uninstall(&mut s, note.as_ref());
        let hooks = hook_events().count();
        let expected = if mode == StatusLineMode::Skip {
            hooks
        } else {
            hooks + 1
        };
        assert_eq!(edit.changes.len(), expected, "{mode:?}: {edit:?}");
        assert_eq!(edit.note, Note::Remove);
        assert_eq!(text(&s), text(&original), "{mode:?}");
    }
    let mut fresh = json!({"theme": "dark"});
    install(&mut fresh, BIN, StatusLineMode::Wrap);
    uninstall(&mut fresh, None);
    assert_eq!(fresh, json!({"theme": "dark"}));
    assert!(uninstall(&mut fresh, None).changes.is_empty());
}

#[test]
fn uninstall_keeps_the_users_empty_lists_and_other_events() {
    let mut s = json!({"hooks": {
        "Stop": [],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "ctxguard sessionstart"}]}],
        "Notification": [{"hooks": []}]
    }});
    let edit = uninstall(&mut s, None);
    assert_eq!(
        edit.changes,
        ["UserPromptSubmit: removed ctxguard sessionstart"]
    );
    assert_eq!(
        text(&s),
        text(&json!({"hooks": {"Stop": [], "Notification": [{"hooks": []}]}}))
    );
}

#[test]
fn a_status_line_it_cannot_read_back_is_left_alone() {
    for cmd in [
        "ctxguard statusline --then \"$HOME/mine.sh\"",
        "ctxguard statusline --colour",
        "ctxguard statusline --then x | tee log",
    ] {
        let mut s = json!({"statusLine": {"type": "command", "command": cmd}});
        let edit = uninstall(&mut s, None);
        assert!(edit.changes.is_empty(), "{edit:?}");
        assert_eq!(edit.notices.len(), 1, "{edit:?}");
        assert_eq!(edit.note, Note::Keep);
        assert_eq!(s["statusLine"]["command"], cmd);
        // Install points it at the binary and keeps the rest as it is.
        install(&mut s, "/new/ctxguard", StatusLineMode::Wrap);
        assert_eq!(
            s["statusLine"]["command"],
            cmd.replacen("ctxguard", "/new/ctxguard", 1)
        );
    }
}

#[test]
fn wrong_shapes_are_refused() {
    let install =
        |mut v: Value| super::install(&mut v, BIN, &none, StatusLineMode::Wrap, Accepts::ALL);
    assert!(install(json!([])).is_err());
    assert!(install(json!({"hooks": []})).is_err());
    assert!(install(json!({"hooks": {"PreToolUse": {}}})).is_err());
}

#[test]
fn an_older_client_gets_shell_lines_and_no_event_it_does_not_know() {
    let old = Accepts::version("2.1.14");
    let mut s = their_settings();
    let edit = super::install(&mut s, BIN, &none, StatusLineMode::Wrap, old).unwrap();
    let hooks = s["hooks"].as_object().unwrap();
    assert!(!hooks.contains_key("PostCompact"), "{s:#}");
    assert_eq!(
        s["hooks"]["SessionStart"][0]["hooks"][0],
        json!({"type": "command", "command": format!("{BIN} sessionstart")})
    );
    assert!(
        edit.changes
            .iter()
            .any(|c| c.contains("a shell line: this Claude Code has no exec form")),
        "{:?}",
        edit.changes
    );
    // Again: nothing changes.
    let again = super::install(&mut s.clone(), BIN, &none, StatusLineMode::Wrap, old).unwrap();
    assert!(again.changes.is_empty(), "{:?}", again.changes);

    // What a current client's install left: exec form and PostCompact, made right for the older
    // client (PostCompact's now empty list goes too, the user's own hooks stay).
    let mut s = their_settings();
    install(&mut s, BIN, StatusLineMode::Wrap);
    assert!(s["hooks"]["PostCompact"].is_array());
    let edit = super::install(&mut s, BIN, &none, StatusLineMode::Wrap, old).unwrap();
    assert!(!s["hooks"].as_object().unwrap().contains_key("PostCompact"));
    assert_eq!(
        s["hooks"]["PreToolUse"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["hooks"].as_array().unwrap())
            .filter(|h| h["command"].as_str().unwrap().contains("ctxguard"))
            .cloned()
            .collect::<Vec<_>>(),
        [json!({"type": "command", "command": format!("{BIN} pretooluse")})]
    );
    assert!(
        edit.changes
            .iter()
            .any(|c| c.starts_with("PostCompact: removed")),
        "{:?}",
        edit.changes
    );
    // And back to a current client: the exec form and PostCompact again.
    super::install(&mut s, BIN, &none, StatusLineMode::Wrap, Accepts::ALL).unwrap();
    assert!(s["hooks"]["PostCompact"].is_array());
    assert!(s["hooks"]["SessionStart"][0]["hooks"][0]["args"].is_array());
}

#[test]
fn for_an_older_client_an_empty_late_event_goes_and_a_users_own_is_named() {
    let old = Accepts::version("2.1.14");
    // An empty list left behind: removed, and said (so the file is written).
    let mut s = json!({"hooks": {"PostCompact": []}});
    let edit = super::install(&mut s, BIN, &none, StatusLineMode::Skip, old).unwrap();
    assert!(s["hooks"].get("PostCompact").is_none(), "{s:#}");
    assert!(
        edit.changes
            .iter()
            .any(|c| c.starts_with("PostCompact: removed the empty list")),
        "{:?}",
        edit.changes
    );
    // The user's own hook stays, with a notice that the client ignores the file for it.
    let mut s = json!({"hooks": {"PostCompact": [{"hooks": [
        {"type": "command", "command": "echo mine"}]}]}});
    let edit = super::install(&mut s, BIN, &none, StatusLineMode::Skip, old).unwrap();
    assert_eq!(
        s["hooks"]["PostCompact"][0]["hooks"][0]["command"],
        "echo mine"
    );
    assert!(
        edit.notices
            .iter()
            .any(|n| n.starts_with("PostCompact still holds hooks of yours")),
        "{:?}",
        edit.notices
    );
}

#[test]
fn every_hook_gets_on_failure_continue_where_the_client_has_the_field() {
    let mut s = their_settings();
    install(&mut s, BIN, StatusLineMode::Wrap);
    for (event, _, _) in hook_events() {
        let ours: Vec<&Value> = s["hooks"][event]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["hooks"].as_array().unwrap())
            .filter(|h| h["command"] == BIN)
            .collect();
        assert_eq!(ours.len(), 1, "{event}: {s:#}");
        assert_eq!(ours[0]["onFailure"], "continue", "{event}");
    }
    // The user's own hooks are not touched.
    assert!(s["hooks"]["PreToolUse"][0]["hooks"][0]
        .get("onFailure")
        .is_none());
    // An entry an earlier install wrote without it, or with "block", gets "continue".
    let mut s = json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
        {"type": "command", "command": BIN, "args": ["pretooluse"], "onFailure": "block", "timeout": 5}]}],
        "Stop": [{"hooks": [{"type": "command", "command": BIN, "args": ["stop"]}]}]}});
    let edit = install(&mut s, BIN, StatusLineMode::Skip);
    assert_eq!(
        s["hooks"]["PreToolUse"][0]["hooks"][0],
        json!({"type": "command", "command": BIN, "args": ["pretooluse"], "onFailure": "continue", "timeout": 5})
    );
    assert_eq!(s["hooks"]["Stop"][0]["hooks"][0]["onFailure"], "continue");
    assert!(
        edit.changes
            .iter()
            .any(|c| c.starts_with("PreToolUse: onFailure \"block\" became")),
        "{:?}",
        edit.changes
    );
    assert!(
        edit.changes
            .iter()
            .any(|c| c.starts_with("Stop: added onFailure")),
        "{:?}",
        edit.changes
    );
    // Idempotent.
    assert!(install(&mut s, BIN, StatusLineMode::Skip)
        .changes
        .is_empty());
    // An older client (2.1.14 has no such field) gets none.
    let mut s = json!({});
    super::install(
        &mut s,
        BIN,
        &none,
        StatusLineMode::Skip,
        Accepts::version("2.1.14"),
    )
    .unwrap();
    assert!(!s.to_string().contains("onFailure"), "{s:#}");
}

#[test]
fn a_skill_shell_command_event_is_left_alone_by_install_and_uninstall() {
    let theirs = json!({"type": "command", "command": "~/check-skill.sh"});
    let original = json!({"hooks": {"PreSkillShellCommand": [{"hooks": [theirs.clone()]}]}});
    let mut s = original.clone();
    let edit = install(&mut s, BIN, StatusLineMode::Skip);
    assert!(edit.notices.is_empty(), "{:?}", edit.notices);
    assert_eq!(
        s["hooks"]["PreSkillShellCommand"],
        original["hooks"]["PreSkillShellCommand"]
    );
    assert_eq!(
        s["hooks"].as_object().unwrap().keys().next().unwrap(),
        "PreSkillShellCommand"
    );
    // Even a ctxguard-looking entry there is not one of ctxguard's hooks to remove.
    uninstall(&mut s, None);
    assert_eq!(s, original);
    // An older client ignores the whole file for it: said, and left.
    let mut s = original.clone();
    let edit = super::install(
        &mut s,
        BIN,
        &none,
        StatusLineMode::Skip,
        Accepts::version("2.1.14"),
    )
    .unwrap();
    assert_eq!(
        s["hooks"]["PreSkillShellCommand"],
        original["hooks"]["PreSkillShellCommand"]
    );
    assert!(
        edit.notices
            .iter()
            .any(|n| n.starts_with("PreSkillShellCommand holds hooks of yours")),
        "{:?}",
        edit.notices
    );
}
