use serde_json::json;

use super::*;

fn names(cell: &str) -> Vec<(String, Option<Value>, bool)> {
    calls(cell)
        .into_iter()
        .map(|c| (c.name, c.arg, c.repeated))
        .collect()
}

/// The cells below are written here in the forms real cells of Codex 0.142–0.145 take (quoted
/// and bare keys, plans, patches, loops, `Promise.all`, app tools), with invented commands and
/// paths.
#[test]
fn a_command_with_bare_or_quoted_keys() {
    let cell = r#"const r = await tools.exec_command({cmd:"head -n 80 notes.md && printf '\\nEND\\n'","workdir":"/home/dev/widget","yield_time_ms":8000,"max_output_tokens":20000});
text(r.output);
"#;
    assert_eq!(
        names(cell),
        vec![(
            "exec_command".into(),
            Some(json!({"cmd": "head -n 80 notes.md && printf '\\nEND\\n'",
                "workdir": "/home/dev/widget", "yield_time_ms": 8000, "max_output_tokens": 20000})),
            false
        )]
    );
}

#[test]
fn a_plan_then_a_command_and_calls_inside_strings_are_not_calls() {
    let cell = r#"const plan = await tools.update_plan({plan:[
  {step:"Create crate",status:"in_progress"},
  {step:"Run tests",status:"pending"}
]});
// tools.exec_command({cmd:"commented out"})
const r = await tools.exec_command({cmd:"rg -n \"tools.get(x)\" src",workdir:"/w"});
text(r.output);"#;
    let found = names(cell);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(
        found[0].1,
        Some(
            json!({"plan": [{"step": "Create crate", "status": "in_progress"},
            {"step": "Run tests", "status": "pending"}]})
        )
    );
    assert_eq!(
        found[1].1.as_ref().unwrap()["cmd"],
        "rg -n \"tools.get(x)\" src"
    );
}

#[test]
fn a_patch_held_in_a_const_a_raw_template_or_joined_strings() {
    let cell = "const patch = \"*** Begin Patch\\n*** Update File: src/a.rs\\n@@\\n-x\\n+y\\n*** End Patch\";\nawait tools.apply_patch(patch);";
    assert_eq!(
        names(cell)[0].1,
        Some(json!(
            "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-x\n+y\n*** End Patch"
        ))
    );
    let cell = "const diff = String.raw`*** Begin Patch\n*** Add File: /p/b.tsx\n+import { x } from \"y\";\n+const re = /\\d+/;\n*** End Patch`;\nconst r = await tools.apply_patch(diff);\ntext(JSON.stringify(r));";
    let arg = names(cell)[0].1.clone().unwrap();
    assert!(
        arg.as_str().unwrap().contains("+const re = /\\d+/;"),
        "{arg}"
    );
    let cell = "await tools.apply_patch('*** Begin Patch\\n' + '*** Delete File: old.txt\\n' + '*** End Patch');";
    assert_eq!(
        names(cell)[0].1,
        Some(json!(
            "*** Begin Patch\n*** Delete File: old.txt\n*** End Patch"
        ))
    );
}

#[test]
fn what_cannot_be_read_is_unknown_never_guessed() {
    // An interpolated template, a variable bound to a call, a computed key: unknown.
    let cell = "const ids=[1,2]; const out=[]; for(const id of ids){const r=await tools.exec_command({cmd:`kubectl logs pod-${id} --tail=20`,workdir:\"/w\"});out.push(r.output)} text(out.join('\\n'))";
    let found = names(cell);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].1.as_ref().unwrap()["cmd"], Value::Null);
    assert!(found[0].2, "inside a loop: may run many times");
    // A `${name}` of a const string is read.
    let cell = "const script=\"/p/lint.sh\";\nawait tools.exec_command({cmd:`bash \"${script}\" --fix 3`});";
    assert_eq!(
        names(cell)[0].1.as_ref().unwrap()["cmd"],
        "bash \"/p/lint.sh\" --fix 3"
    );
    let cell = "const c = await build(); await tools.exec_command({cmd: c});";
    assert_eq!(names(cell)[0].1, Some(json!({"cmd": null})));
    let cell = "await tools.exec_command({...opts, cmd: \"ls\"});";
    assert_eq!(names(cell)[0].1, None);
    let cell = "await tools.apply_patch(make_patch());";
    assert_eq!(names(cell)[0].1, None);
    // A name bound twice is not known.
    let cell = "let c = \"a\"; let c = \"b\"; await tools.exec_command({cmd: c});";
    assert_eq!(names(cell)[0].1, Some(json!({"cmd": null})));
    // Cut in the middle: the call is seen, its argument is not.
    let cell = "await tools.exec_command({cmd: \"cargo te";
    assert_eq!(names(cell)[0].1, None);
}

#[test]
fn calls_in_promise_all_run_once_calls_in_callbacks_and_loops_may_not() {
    let cell = r#"const results = await Promise.all([
  tools.exec_command({cmd:"npm run lint","workdir":"/m","yield_time_ms":2500}),
  tools.exec_command({cmd:"npm run check","workdir":"/m","yield_time_ms":2500})
]);
for (const res of results) text(JSON.stringify(res));
const more = await Promise.all(["a","b"].map(f => tools.exec_command({cmd: "cat " + f})));
for (const f of ["x"]) await tools.exec_command({cmd: "ls"});
await tools.exec_command({cmd: "git status"});"#;
    let found = names(cell);
    let shape: Vec<(Option<&str>, bool)> = found
        .iter()
        .map(|(_, a, r)| (a.as_ref().and_then(|a| a["cmd"].as_str()), *r))
        .collect();
    assert_eq!(
        shape,
        vec![
            (Some("npm run lint"), false),
            (Some("npm run check"), false),
            (None, true),
            (Some("ls"), true),
            (Some("git status"), false),
        ]
    );
}

#[test]
fn mcp_tools_and_bracketed_names() {
    let cell = "const result = await tools.mcp__codex_apps__github_create_pull_request({repository_full_name:\"acme/kite\",head_branch:\"codex/retry-upload\",base_branch:\"main\",draft:false,title:\"fix: retry a failed upload\",body:\"## Summary\\n- one retry\"});\ntext(JSON.stringify(result));\nawait tools[\"web__run\"]({search_query:[{q:\"sqlite wal mode\"}]});";
    let found = names(cell);
    assert_eq!(found[0].0, "mcp__codex_apps__github_create_pull_request");
    assert_eq!(found[0].1.as_ref().unwrap()["draft"], json!(false));
    assert_eq!(found[1].0, "web__run");
    // `x.tools.y(` is not the tools object.
    assert!(names("ctx.tools.exec_command({cmd:\"ls\"})").is_empty());
}

#[test]
fn javascript_escapes() {
    let cell = r"await tools.exec_command({cmd: 'echo \'a\' \x41 \u00e9 \u{1F600} \ud83d\ude00 tab\there'});";
    assert_eq!(
        names(cell)[0].1.as_ref().unwrap()["cmd"],
        "echo 'a' A é 😀 😀 tab\there"
    );
}

fn parts(texts: &[&str]) -> Vec<String> {
    texts.iter().map(ToString::to_string).collect()
}

#[test]
fn a_cells_output_its_status_and_parts() {
    let out = output(&parts(&[
        "Script completed\nWall time 1.2 seconds\nOutput:\n",
        "{\"chunk_id\":\"9c41e0\",\"wall_time_seconds\":1.0,\"session_id\":51807,\"original_token_count\":17,\"output\":\"> npm run unit\\n\"}",
        "",
    ]))
    .unwrap();
    assert_eq!(out.status, CellStatus::Completed);
    assert_eq!(out.parts.len(), 2);
    assert_eq!(
        exec_result(&out.parts[0]),
        ExecResult {
            output: "> npm run unit\n".into(),
            exit_code: None,
            session: Some("51807".into())
        }
    );
    let done = exec_result("{\"chunk_id\":\"b07d12\",\"wall_time_seconds\":12.5,\"exit_code\":0,\"original_token_count\":88}");
    assert_eq!((done.exit_code, done.session), (Some(0), None));
    // Plain text is the output itself; Codex's note on a cut output is not.
    assert_eq!(
        exec_result("Warning: truncated output (original token count: 4821)\nTotal output lines: 390\n\nimport x\n").output,
        "import x\n"
    );
    // A session printed alone (`text(`SESSION_ID=${r.session_id}`)`).
    assert_eq!(
        exec_result("SESSION_ID=58120").session.as_deref(),
        Some("58120")
    );
    assert_eq!(exec_result("SESSION_ID=").session, None);
    let running = output(&parts(&[
        "Script running with cell ID 24\nWall time 10.0 seconds\nOutput:\n",
    ]))
    .unwrap();
    assert_eq!(running.status, CellStatus::Running("24".into()));
    assert!(running.parts.is_empty());
    let failed = output(&parts(&[
        "Script failed\nWall time 0.0 seconds\nOutput:\n",
        "Script error:\napply_patch verification failed: Failed to find expected lines in /x/a.md:\n",
    ]))
    .unwrap();
    assert_eq!(failed.status, CellStatus::Failed);
    // The output as one string: what follows the header is the one part.
    let one = output(&parts(&[
        "Script completed\nWall time 0.1 seconds\nOutput:\nhello\n",
    ]))
    .unwrap();
    assert_eq!(one.parts, vec!["hello\n".to_string()]);
    assert_eq!(output(&parts(&["Exit code: 0\nOutput:\nx"])), None);
    assert_eq!(output(&[]), None);
}

#[test]
fn a_result_printed_after_a_label_is_read_whole() {
    // `results.forEach((r,i)=>text(`---${i+1}---\n${JSON.stringify(r)}`))` (a form real 0.144
    // cells print results in): the label is the cell's, the result the command's.
    let r = exec_result("---1---\n{\"chunk_id\":\"e4a9f2\",\"session_id\":60233,\"output\":\"   Compiling widget\\n\"}");
    assert_eq!(r.session.as_deref(), Some("60233"));
    assert_eq!(r.exit_code, None);
    let r = exec_result(
        "---2---\n{\"chunk_id\":\"a1\",\"exit_code\":0,\"output\":\"Task: test:e2e\\n\"}",
    );
    assert_eq!(
        (r.exit_code, r.output.as_str()),
        (Some(0), "Task: test:e2e\n")
    );
    // Text that is no result stays as it is.
    let r = exec_result("note:\nnot json");
    assert_eq!(r.output, "note:\nnot json");
}
