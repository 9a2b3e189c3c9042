use super::*;

/// ctxguard's hook subcommands, recognised by a program named `ctxguard` (the caller's rules
/// are richer; these are enough for the edits).
fn sub_of(line: &str) -> Option<String> {
    let mut words = line.split_whitespace();
    let program = words.next()?;
    let sub = words.next()?;
    let ours = program.rsplit('/').next()?.starts_with("ctxguard")
        && [
            "sessionstart",
            "userpromptsubmit",
            "pretooluse",
            "precompact",
            "sessionend",
            "stop",
        ]
        .contains(&sub);
    ours.then(|| sub.to_string())
}

const BIN: &str = "/home/u/.local/bin/ctxguard";

fn wanted() -> Vec<(&'static str, &'static str, String)> {
    [
        ("SessionStart", "sessionstart"),
        ("UserPromptSubmit", "userpromptsubmit"),
        ("PreToolUse", "pretooluse"),
        ("PreCompact", "precompact"),
        ("SessionEnd", "sessionend"),
    ]
    .into_iter()
    .map(|(e, s)| (e, s, format!("{BIN} {s}")))
    .collect()
}

fn install_all(doc: &mut Value) -> Edit {
    let w = wanted();
    let w: Vec<(&str, &str, &str)> = w.iter().map(|(e, s, c)| (*e, *s, c.as_str())).collect();
    install(doc, &w, &sub_of).unwrap()
}

fn hash_of(doc: &Value, key_end: &str) -> String {
    handlers(doc)
        .into_iter()
        .find(|h| h.at.key("f").ends_with(key_end))
        .and_then(|h| h.hash)
        .unwrap_or_else(|| panic!("no handler {key_end}"))
}

/// Every vector here was read from the real Codex CLI 0.169.0: the hooks.json below written to a
/// temporary `CODEX_HOME`, then `codex app-server` asked over stdio JSON-RPC (`initialize`,
/// `initialized`, `hooks/list`) for each hook's `currentHash`.
#[test]
fn the_trust_hash_is_the_one_codex_computes() {
    // As `ctxguard install --client codex` writes them, for a binary at BIN.
    let mut doc = json!({});
    install_all(&mut doc);
    for (key, hash) in [
        (
            "session_start:0:0",
            "sha256:48d12d5a9c0f83dfbf80d3b4188ac6ef91fd129ba81eff09458b950e0868efc7",
        ),
        (
            "user_prompt_submit:0:0",
            "sha256:8eaa4e2fc44660c662eda5f1678b50102da2a571d27a5c4cd854c25ffe2cc2af",
        ),
        (
            "pre_tool_use:0:0",
            "sha256:876dc6d407afeb0c4a68e42cb136e8f6d99de387f74af14418e8aaf4a9cfc6aa",
        ),
        (
            "pre_compact:0:0",
            "sha256:93ef1aa9ee5bc62fcc4e7fee4ccb172063edf19a3624607c6768eae2d4c95232",
        ),
        // With `"timeout": 3` (Codex's cap for SessionEnd): computed here, and the real Codex's
        // `hooks/list` reports the entry install writes trusted with it
        // (tests/install_codex.rs, the_real_codex_trusts_what_install_trust_writes). Without a
        // timeout (1 s) the real Codex gave sha256:6dad707ab95e7a8a2ce797b2b443e7efeff87511063b587ce078ca88852514c6.
        (
            "session_end:0:0",
            "sha256:ae32f93008f5067ca32a277568c69e1246320280f35c90951a94db96f907338f",
        ),
    ] {
        assert_eq!(hash_of(&doc, key), hash, "{key}");
    }

    // What Codex normalises: a matcher kept (even empty) where the event takes one and dropped
    // where it does not, the timeout at least 1 s (SessionEnd's 1 to 3, default 1; 600 for the
    // rest), `async`, a `statusMessage` kept even when empty.
    let doc = json!({"description": "x", "hooks": {
        "PreToolUse": [
            {"matcher": "", "hooks": [{"type": "command", "command": "a", "timeout": 0}]},
            {"matcher": "*", "hooks": [{"type": "command", "command": "/usr/bin/ctxguard pretooluse"}]},
            {"hooks": [{"type": "command", "command": "d", "timeout": 30, "statusMessage": "hi"}]}
        ],
        "SessionEnd": [{"hooks": [
            {"type": "command", "command": "a", "timeout": 10},
            {"type": "command", "command": "b", "timeout": 2},
            {"type": "command", "command": "c", "timeout": 0}
        ]}, {"matcher": "m1", "hooks": [{"type": "command", "command": "a"}]}],
        "UserPromptSubmit": [{"matcher": "zz", "hooks": [{"type": "command", "command": "e"}]}],
        "SessionStart": [{"matcher": "x", "hooks": [{"type": "command", "command": "i", "statusMessage": ""}]}],
        "PreCompact": [{"hooks": [{"type": "command", "command": "g", "async": true}]}],
        "Stop": [{"matcher": "m4", "hooks": [{"type": "command", "command": "d"}]}],
        "Interrupt": [{"matcher": "x", "hooks": [{"type": "command", "command": "h", "timeout": 5}]}],
        "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x", "timeout": 30, "additionalContextLimit": 100}]}]
    }});
    for (key, hash) in [
        (
            "pre_tool_use:0:0",
            "3589e4357bc675f278e901a3e71b696a6e7428616a54f4f97040d4d073106793",
        ),
        (
            "pre_tool_use:1:0",
            "a2a0efb30f5fc01b8ba99d27ddb98a2543761912645b63d767bdbdf334e411a5",
        ),
        (
            "pre_tool_use:2:0",
            "e9b39d1671abf13bd846d4248229fc6482f5b895fa733ea47c3a2593fa6788fe",
        ),
        (
            "session_end:0:0",
            "42a5307396a3311376788cd874aae704206cb585b4da5dbcc11a59a23e824111",
        ),
        (
            "session_end:0:1",
            "aa297b98f8964ed3f6bf9d8e54cc83a90cff785857ad3ea9ea2a35f4961748f0",
        ),
        (
            "session_end:0:2",
            "795b45aba205ef760f15d04d0542dd18b59b1f17245cea155781ea8720b7e9c4",
        ),
        (
            "session_end:1:0",
            "aff804995e4ae686e9cf88dbd35210c61dc1079f87d727c13140b4182b689b18",
        ),
        (
            "user_prompt_submit:0:0",
            "481b51bc9929ea565f24b6fd5d8554ddf305ba1e5e2bf0a7016464c18f3cba72",
        ),
        (
            "session_start:0:0",
            "40c41728aab11a3895126c0a942005013d544d31493ca9363008c1b407bf69fe",
        ),
        (
            "pre_compact:0:0",
            "93db6153f2a48a4f69015885ef8ecb0e2af420851f6ac5c6bc0c755c521f313a",
        ),
        (
            "stop:0:0",
            "ad1e219e915e2c4ee65766301b6a14226d3fa00fb9a699d9194f78d088ad642a",
        ),
        (
            "interrupt:0:0",
            "c98104dd1a46ef8e7ca7aa5d6f706a064bb2e8458ad8eefa9e55232ff8f4aef7",
        ),
        (
            "post_tool_use:0:0",
            "0fd7e2c4a94d684e9b9601033b662149515d003a679f7d1893afcfb7b590aceb",
        ),
    ] {
        assert_eq!(hash_of(&doc, key), format!("sha256:{hash}"), "{key}");
    }
}

#[test]
fn keys_name_the_canonical_file_the_snake_case_event_and_the_place() {
    assert_eq!(snake_case("PreToolUse"), "pre_tool_use");
    assert_eq!(snake_case("SessionEnd"), "session_end");
    let at = Position {
        event: "UserPromptSubmit".into(),
        group: 2,
        index: 1,
    };
    assert_eq!(
        at.key("/h/.codex/hooks.json"),
        "/h/.codex/hooks.json:user_prompt_submit:2:1"
    );
}

#[test]
fn install_appends_its_own_groups_keeps_everything_else_and_is_idempotent() {
    let mut doc = json!({
        "description": "mine",
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh", "timeout": 5}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]
        },
    });
    let edit = install_all(&mut doc);
    assert_eq!(
        edit.changes,
        [
            "SessionStart: added `/home/u/.local/bin/ctxguard sessionstart`",
            "UserPromptSubmit: added `/home/u/.local/bin/ctxguard userpromptsubmit`",
            "PreToolUse: added `/home/u/.local/bin/ctxguard pretooluse`",
            "PreCompact: added `/home/u/.local/bin/ctxguard precompact`",
            "SessionEnd: added `/home/u/.local/bin/ctxguard sessionend`",
        ]
    );
    assert!(edit.moved.is_empty() && edit.removed.is_empty());
    let keys: Vec<&String> = doc["hooks"].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "PreToolUse",
            "Stop",
            "SessionStart",
            "UserPromptSubmit",
            "PreCompact",
            "SessionEnd"
        ]
    );
    assert_eq!(
        doc["hooks"]["PreToolUse"],
        json!([
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh", "timeout": 5}]},
            {"hooks": [{"type": "command", "command": "/home/u/.local/bin/ctxguard pretooluse"}]}
        ])
    );
    assert_eq!(doc["description"], "mine");
    let again = doc.clone();
    assert_eq!(install_all(&mut doc), Edit::default());
    assert_eq!(doc, again);
}

#[test]
fn install_points_an_old_path_at_the_binary_and_drops_copies_moving_the_users_trust() {
    let mut doc = json!({"hooks": {"PreToolUse": [
        {"hooks": [{"type": "command", "command": "/old/ctxguard pretooluse"}, {"type": "command", "command": "mine"}]},
        {"hooks": [{"type": "command", "command": "ctxguard pretooluse"}]},
        {"hooks": [{"type": "command", "command": "later"}]}
    ]}});
    let edit = install_all(&mut doc);
    assert_eq!(
        edit.changes[2],
        "PreToolUse: `/old/ctxguard pretooluse` became `/home/u/.local/bin/ctxguard pretooluse` \
         (Codex asks to trust it again)"
    );
    assert!(edit
        .changes
        .contains(&"PreToolUse: removed the duplicate `ctxguard pretooluse`".to_string()));
    assert_eq!(
        doc["hooks"]["PreToolUse"],
        json!([
            {"hooks": [{"type": "command", "command": "/home/u/.local/bin/ctxguard pretooluse"}, {"type": "command", "command": "mine"}]},
            {"hooks": [{"type": "command", "command": "later"}]}
        ])
    );
    let at = |group, index| Position {
        event: "PreToolUse".into(),
        group,
        index,
    };
    assert_eq!(edit.moved, [(at(2, 0), at(1, 0))]);
}

#[test]
fn uninstall_takes_out_only_ctxguards_handlers_and_what_they_leave_empty() {
    let original = json!({
        "description": "mine",
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]
        },
    });
    let mut doc = original.clone();
    install_all(&mut doc);
    let edit = uninstall(&mut doc, &sub_of).unwrap();
    assert_eq!(doc, original);
    assert_eq!(edit.removed.len(), 5);
    assert!(edit.moved.is_empty());
    assert_eq!(edit.changes.len(), 5);
    assert_eq!(
        edit.removed[0].at.key("f"),
        "f:pre_tool_use:1:0",
        "{:?}",
        edit.removed
    );

    // A file install made: nothing is left.
    let mut doc = json!({});
    install_all(&mut doc);
    uninstall(&mut doc, &sub_of).unwrap();
    assert_eq!(doc, json!({}));

    // Nothing of ctxguard's: no change at all, an empty `hooks` included.
    let mut doc = json!({"hooks": {}});
    assert_eq!(uninstall(&mut doc, &sub_of).unwrap(), Edit::default());
    assert_eq!(doc, json!({"hooks": {}}));
}

#[test]
fn uninstall_says_which_hooks_of_the_user_moved_up() {
    let mut doc = json!({"hooks": {"SessionStart": [
        {"hooks": [{"type": "command", "command": "first"}]},
        {"hooks": [{"type": "command", "command": "ctxguard sessionstart"}]},
        {"hooks": [{"type": "command", "command": "ctxguard stop"}, {"type": "command", "command": "third"}]},
        {"hooks": [{"type": "command", "command": "fourth"}]}
    ]}});
    let edit = uninstall(&mut doc, &sub_of).unwrap();
    let at = |group, index| Position {
        event: "SessionStart".into(),
        group,
        index,
    };
    assert_eq!(edit.moved, [(at(2, 1), at(1, 0)), (at(3, 0), at(2, 0))]);
}

#[test]
fn a_file_that_is_not_an_object_or_hooks_of_the_wrong_type_is_refused() {
    for bad in [
        json!([]),
        json!({"hooks": []}),
        json!({"hooks": {"PreToolUse": {}}}),
    ] {
        let mut doc = bad.clone();
        let w = wanted();
        let w: Vec<(&str, &str, &str)> = w.iter().map(|(e, s, c)| (*e, *s, c.as_str())).collect();
        assert!(install(&mut doc, &w, &sub_of).is_err(), "{bad}");
    }
}

#[test]
fn trust_is_recorded_moved_and_taken_out_keeping_the_rest_of_config_toml() {
    let original =
        "# my settings\nmodel = \"gpt-5\"  # the default\n\n[profiles.fast]\nmodel = \"mini\"\n";
    let mut doc: DocumentMut = original.parse().unwrap();
    assert_eq!(
        trust(&doc, "k:pre_tool_use:0:0", "sha256:1"),
        Trust::Untrusted
    );
    assert!(set_trusted(&mut doc, "/h/hooks.json:pre_tool_use:0:0", "sha256:1").unwrap());
    assert!(!set_trusted(&mut doc, "/h/hooks.json:pre_tool_use:0:0", "sha256:1").unwrap());
    assert!(set_trusted(&mut doc, "/h/hooks.json:session_end:0:0", "sha256:2").unwrap());
    let text = doc.to_string();
    assert_eq!(
        text,
        format!(
            "{original}\n[hooks.state.\"/h/hooks.json:pre_tool_use:0:0\"]\ntrusted_hash = \
             \"sha256:1\"\n\n[hooks.state.\"/h/hooks.json:session_end:0:0\"]\ntrusted_hash = \
             \"sha256:2\"\n"
        )
    );
    let doc2: DocumentMut = text.parse().unwrap();
    assert_eq!(
        trust(&doc2, "/h/hooks.json:pre_tool_use:0:0", "sha256:1"),
        Trust::Trusted
    );
    assert_eq!(
        trust(&doc2, "/h/hooks.json:pre_tool_use:0:0", "sha256:9"),
        Trust::Modified
    );
    assert!(move_state(
        &mut doc,
        "/h/hooks.json:session_end:0:0",
        "/h/hooks.json:session_end:0:1"
    )
    .unwrap());
    assert_eq!(
        trust(&doc, "/h/hooks.json:session_end:0:1", "sha256:2"),
        Trust::Trusted
    );
    assert!(take_state(&mut doc, "/h/hooks.json:pre_tool_use:0:0").is_some());
    assert!(take_state(&mut doc, "/h/hooks.json:session_end:0:1").is_some());
    assert_eq!(doc.to_string(), original, "given back byte for byte");

    // A table the user wrote by hand keeps its header; `enabled = false` turns a hook off.
    let hand = "[hooks]\n\n[hooks.state.\"k\"]\nenabled = false\ntrusted_hash = \"sha256:1\"\n";
    let mut doc: DocumentMut = hand.parse().unwrap();
    assert_eq!(trust(&doc, "k", "sha256:1"), Trust::Disabled);
    take_state(&mut doc, "k");
    assert_eq!(doc.to_string(), "[hooks]\n");
    let mut doc: DocumentMut = "hooks = 1\n".parse().unwrap();
    assert!(set_trusted(&mut doc, "k", "sha256:1").is_err());
}
