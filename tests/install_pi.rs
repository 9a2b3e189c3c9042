//! `install --client pi` and `uninstall --client pi` on the real binary, in a temp HOME: the
//! extension written into pi's folder with this binary's path, once; a file of the same name
//! that ctxguard did not write never overwritten nor removed; uninstall taking out exactly what
//! install added, a folder only when install created it and nothing else is in it; the other
//! clients' flags refused. (The real pi loading what install writes: tests/e2e_pi.rs.)

use std::fs;
use std::path::PathBuf;

use crate::util::*;

const HEADER: &str =
    "// Written by `ctxguard install --client pi`; `ctxguard uninstall --client pi` removes it.";

fn agent(env: &TestEnv) -> PathBuf {
    env.home().join(".pi/agent")
}

fn extension(env: &TestEnv) -> PathBuf {
    agent(env).join("extensions/ctxguard.ts")
}

fn shipped() -> String {
    fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/pi/ctxguard.ts")).unwrap()
}

#[test]
fn install_writes_the_extension_with_this_binary_once_and_uninstall_takes_it_out() {
    let env = TestEnv::new();
    fs::create_dir_all(agent(&env)).unwrap();
    let dry = env.run(&["install", "--client", "pi", "--dry-run"], "");
    assert_eq!(dry.code, 0, "{dry:?}");
    assert!(dry.stdout.contains("would write"), "{dry:?}");
    assert!(!extension(&env).exists() && !agent(&env).join("extensions").exists());

    let run = env.run(&["install", "--client", "pi"], "");
    assert_eq!(run.code, 0, "{run:?}");
    let text = fs::read_to_string(extension(&env)).unwrap();
    assert!(text.starts_with(&format!("{HEADER}\n")), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("const INSTALLED_BIN: string = "))
        .unwrap()
        .to_string();
    // This binary, by its canonical path (on Windows, as ctxguard spells it there).
    #[cfg(unix)]
    {
        let bin = fs::canonicalize(env!("CARGO_BIN_EXE_ctxguard")).unwrap();
        let want = format!(
            "const INSTALLED_BIN: string = {};",
            serde_json::to_string(bin.to_str().unwrap()).unwrap()
        );
        assert_eq!(line, want);
    }
    assert!(
        line.ends_with("ctxguard\";") || line.ends_with("ctxguard.exe\";"),
        "{line}"
    );
    // The rest is the extension as shipped, but for the path.
    let body: String = text
        .lines()
        .skip_while(|l| l.starts_with("//"))
        .map(|l| format!("{l}\n"))
        .collect();
    let shipped = shipped().replace("const INSTALLED_BIN: string = \"@@CTXGUARD_BIN@@\";", &line);
    assert_eq!(body, shipped);

    let again = env.run(&["install", "--client", "pi"], "");
    assert!(again.stdout.contains("(nothing changed)"), "{again:?}");
    assert_eq!(fs::read_to_string(extension(&env)).unwrap(), text);

    let out = env.run(&["uninstall", "--client", "pi"], "");
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!extension(&env).exists());
    // install made the extensions folder, so uninstall takes it out; the agent directory, the
    // user's, stays.
    assert!(!agent(&env).join("extensions").exists(), "{out:?}");
    assert!(agent(&env).is_dir());
    let twice = env.run(&["uninstall", "--client", "pi"], "");
    assert_eq!(twice.code, 0);
    assert!(twice.stdout.contains("nothing to remove"), "{twice:?}");
}

#[test]
fn a_file_of_the_same_name_ctxguard_did_not_write_is_never_overwritten_nor_removed() {
    let env = TestEnv::new();
    let path = extension(&env);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mine = "export default function (pi) { /* the user's own */ }\n";
    fs::write(&path, mine).unwrap();
    let run = env.run(&["install", "--client", "pi"], "");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("a file ctxguard did not write")
            && run.stderr.contains("never overwrites it"),
        "{run:?}"
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), mine);
    let out = env.run(&["uninstall", "--client", "pi"], "");
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("left untouched"), "{out:?}");
    assert_eq!(fs::read_to_string(&path).unwrap(), mine);
}

#[test]
fn a_folder_is_removed_only_when_install_made_it_and_nothing_else_is_in_it() {
    // The user's extensions folder, with an extension of theirs: both stay.
    let env = TestEnv::new();
    let dir = agent(&env).join("extensions");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("theirs.ts"), "export default () => {};\n").unwrap();
    assert_eq!(env.run(&["install", "--client", "pi"], "").code, 0);
    assert_eq!(env.run(&["uninstall", "--client", "pi"], "").code, 0);
    assert!(dir.join("theirs.ts").is_file() && !extension(&env).exists());

    // No agent directory at all: install makes it and the folder; uninstall takes both out,
    // unless something else came in (pi's sessions), which keeps the agent directory.
    let env = TestEnv::new();
    assert_eq!(env.run(&["install", "--client", "pi"], "").code, 0);
    assert!(extension(&env).is_file());
    fs::create_dir_all(agent(&env).join("sessions")).unwrap();
    let out = env.run(&["uninstall", "--client", "pi"], "");
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!agent(&env).join("extensions").exists(), "{out:?}");
    assert!(agent(&env).join("sessions").is_dir());
    let env = TestEnv::new();
    assert_eq!(env.run(&["install", "--client", "pi"], "").code, 0);
    assert_eq!(env.run(&["uninstall", "--client", "pi"], "").code, 0);
    assert!(!env.home().join(".pi").exists());
}

#[test]
fn an_older_copy_is_updated_in_place_keeping_what_install_created() {
    let env = TestEnv::new();
    assert_eq!(env.run(&["install", "--client", "pi"], "").code, 0);
    let path = extension(&env);
    let text = fs::read_to_string(&path).unwrap();
    let old: String = text
        .lines()
        .map(|l| {
            if l.starts_with("const INSTALLED_BIN: string = ") {
                "const INSTALLED_BIN: string = \"/old/ctxguard\";".to_string()
            } else {
                l.to_string()
            }
        })
        .map(|l| format!("{l}\n"))
        .collect();
    fs::write(&path, &old).unwrap();
    let run = env.run(&["install", "--client", "pi"], "");
    assert!(run.stdout.contains("updated"), "{run:?}");
    assert_eq!(fs::read_to_string(&path).unwrap(), text);
    assert_eq!(env.run(&["uninstall", "--client", "pi"], "").code, 0);
    assert!(!env.home().join(".pi").exists());
}

#[test]
fn pi_coding_agent_dir_is_where_the_extension_goes() {
    let mut env = TestEnv::new();
    let dir = env.dir.path().join("pi agent");
    env.set("PI_CODING_AGENT_DIR", dir.to_str().unwrap());
    let run = env.run(&["install", "--client", "pi"], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("(PI_CODING_AGENT_DIR)"), "{run:?}");
    assert!(dir.join("extensions/ctxguard.ts").is_file());
    assert!(!env.home().join(".pi").exists());
}

#[test]
fn the_other_clients_flags_are_refused_for_pi() {
    let env = TestEnv::new();
    for (args, says) in [
        (&["install", "--client", "pi", "--project"][..], "--project"),
        (
            &["install", "--client", "pi", "--client-version", "2.1.330"][..],
            "--client-version",
        ),
        (&["install", "--client", "pi", "--trust"][..], "--trust"),
        (
            &["install", "--client", "pi", "--statusline-only"][..],
            "--statusline-only",
        ),
        (
            &["uninstall", "--client", "pi", "--project"][..],
            "--project",
        ),
    ] {
        let run = env.run(args, "");
        assert_eq!(run.code, 1, "{args:?}: {run:?}");
        assert!(run.stderr.contains(says), "{args:?}: {run:?}");
    }
    assert!(!env.home().join(".pi").exists());
}
