use super::*;
use crate::commands::doctor::tests::{ctx, lines};

/// A context with pi's agent directory at `/h/.pi/agent`, what is at the extension's path, and
/// these settings (as `crate::pi::config` read them) and default model with its window.
fn with_pi(extension: Existing, settings: Settings, model: Option<(&str, Option<u64>)>) -> Context {
    let mut c = ctx(&[]);
    c.pi = Some(Setup {
        agent: PathBuf::from("/h/.pi/agent"),
        exists: true,
        extension: Ok(extension),
        settings,
        model: model.map(|(m, w)| (m.to_string(), w)),
    });
    c
}

fn unset() -> Settings {
    Settings::default()
}

fn slashes(findings: &[Finding]) -> Vec<String> {
    lines(findings)
        .into_iter()
        .map(|l| l.replace('\\', "/"))
        .collect()
}

#[test]
fn no_extension_is_said_and_fails_only_under_client_pi() {
    let c = with_pi(Existing::None, unset(), None);
    assert_eq!(
        slashes(&extension(&c)),
        ["info: ctxguard's extension is not in pi's folder (/h/.pi/agent/extensions/ctxguard.ts does not exist)"]
    );
    assert_eq!(extension_required(&c)[0].status, Status::Fail);
    // Without pi's directory, plain doctor says nothing of pi; --client pi fails.
    let mut none = ctx(&[]);
    assert!(extension(&none).is_empty());
    none.pi = Some(Setup {
        exists: false,
        ..with_pi(Existing::None, unset(), None).pi.unwrap()
    });
    assert_eq!(
        slashes(&present(&none)),
        ["fail: no pi agent directory at /h/.pi/agent"]
    );
}

#[test]
fn a_file_of_the_users_and_a_copy_running_a_missing_binary_fail() {
    let c = with_pi(
        Existing::Theirs("a file ctxguard did not write"),
        unset(),
        None,
    );
    let f = extension(&c);
    assert_eq!(f[0].status, Status::Fail);
    assert!(
        f[0].message.contains("a file ctxguard did not write"),
        "{f:?}"
    );
    let copy = ext::render("/nowhere/ctxguard", &[]).unwrap();
    let c = with_pi(Existing::Ours(copy, Vec::new()), unset(), None);
    assert_eq!(
        slashes(&extension(&c)),
        ["fail: /h/.pi/agent/extensions/ctxguard.ts runs /nowhere/ctxguard, which is not an executable file: every hook call does nothing"]
    );
}

#[test]
fn a_copy_running_a_ctxguard_binary_is_ok_and_another_program_fails() {
    // The test binary holds ctxguard's signature, as every ctxguard binary does.
    let exe = std::env::current_exe().unwrap();
    let copy = ext::render(exe.to_str().unwrap(), &[]).unwrap();
    let c = with_pi(Existing::Ours(copy, Vec::new()), unset(), None);
    let f = extension(&c);
    assert_eq!(f[0].status, Status::Ok, "{f:?}");
    #[cfg(unix)]
    {
        let copy = ext::render("/bin/sh", &[]).unwrap();
        let c = with_pi(Existing::Ours(copy, Vec::new()), unset(), None);
        let f = extension(&c);
        assert_eq!(f[0].status, Status::Fail, "{f:?}");
        assert!(f[0].message.contains("not a ctxguard binary"), "{f:?}");
    }
}

#[test]
fn the_compaction_point_is_the_window_less_the_reserve_and_off_is_said() {
    let c = with_pi(
        Existing::None,
        Settings {
            enabled: Some((true, "/settings-0.json".into())),
            reserve: Some((8000, "/settings-1.json".into())),
            ..unset()
        },
        Some(("mock/mock-model", Some(40_000))),
    );
    assert_eq!(
        slashes(&compaction(&c)),
        ["info: pi compacts mock/mock-model at 32k tokens: its 40k-token window (/h/.pi/agent/models.json) less compaction.reserveTokens 8k (/settings-1.json)"]
    );
    let off = with_pi(
        Existing::None,
        Settings {
            enabled: Some((false, "/settings-0.json".into())),
            ..unset()
        },
        None,
    );
    let f = slashes(&compaction(&off));
    assert_eq!(f.len(), 2, "{f:?}");
    assert!(
        f[0].starts_with("warn: pi's auto-compaction is off (/settings-0.json)"),
        "{f:?}"
    );
    assert!(f[1].contains("reserveTokens 16k (pi's default)"), "{f:?}");
}

#[test]
fn loading_is_proved_by_pis_own_list_and_a_missing_entry_fails() {
    let copy = ext::render("/bin/ctxguard", &[]).unwrap();
    let mut c = with_pi(Existing::Ours(copy, Vec::new()), unset(), None);
    let found = |loaded| Probe::Found {
        path: PathBuf::from("/usr/bin/pi"),
        version: Ok("0.73.1".into()),
        loaded,
    };
    c.pi_probe = found(Ok(vec![probe::Loaded {
        name: "ctxguard".into(),
        path: ext::extension_path(Path::new("/h/.pi/agent"))
            .display()
            .to_string(),
    }]));
    assert_eq!(loading(&c)[0].status, Status::Ok, "{:?}", loading(&c));
    c.pi_probe = found(Ok(Vec::new()));
    assert_eq!(loading(&c)[0].status, Status::Fail);
    c.pi_probe = found(Err("no answer to get_commands within 20s".into()));
    let f = loading(&c);
    assert_eq!(f[0].status, Status::Warn);
    assert!(f[0]
        .message
        .contains("checked: the file and the binary it runs"));
    // pi's version, tested or not.
    c.pi_probe = found(Ok(Vec::new()));
    assert_eq!(version(&c)[1].status, Status::Ok);
    c.pi_probe = Probe::NotFound;
    assert_eq!(version(&c)[1].status, Status::Warn);
    assert!(loading(&c).is_empty());
}

#[test]
fn the_npm_package_loaded_instead_is_ok_and_beside_the_copy_is_said_twice() {
    let package = |path: &str| Probe::Found {
        path: PathBuf::from("/usr/bin/pi"),
        version: Ok("1.6.0".into()),
        loaded: Ok(vec![probe::Loaded {
            name: "ctxguard".into(),
            path: path.into(),
        }]),
    };
    let mut c = with_pi(Existing::None, unset(), None);
    c.pi_probe = package("/h/.pi/agent/npm/node_modules/ctxguard/pi/ctxguard.ts");
    assert!(extension_required(&c)
        .iter()
        .all(|f| f.status != Status::Fail));
    let f = slashes(&loading(&c));
    assert_eq!(
        f,
        ["ok: pi loads ctxguard's extension from /h/.pi/agent/npm/node_modules/ctxguard/pi/ctxguard.ts (a package: `pi install npm:ctxguard`)"]
    );
    let copy = ext::render("/bin/ctxguard", &[]).unwrap();
    let mut both = with_pi(Existing::Ours(copy, Vec::new()), unset(), None);
    both.pi_probe = package("/p/ctxguard.ts");
    let f = loading(&both);
    assert_eq!(f.len(), 2, "{f:?}");
    assert_eq!(f[0].status, Status::Fail);
    assert_eq!(f[1].status, Status::Warn);
    assert!(f[1].message.contains("every hook runs twice"), "{f:?}");
}
