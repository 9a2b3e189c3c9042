//! The plugin from a marketplace, on the real client (Claude Code 2.1.332): `claude plugin
//! marketplace add` on a local folder laid out as the repository is, `claude plugin install
//! ctxguard@ctxguard`, no ctxguard on `PATH`, and the release (`ship.rs`) served on loopback.
//! The plugin's launcher downloads the binary into the plugin's data folder the client gives it
//! (`CLAUDE_PLUGIN_DATA`), checks it against the pins, and the session's hooks run it.

use std::time::Instant;

use super::*;
use crate::ship::{plugin_copy, release, Serve};

const VERSION: &str = "2.1.332";

impl Rig {
    /// `claude plugin ARGS` in the rig's home; its stdout.
    fn plugin(&self, args: &[&str]) -> String {
        let mut cmd = Command::new(&self.client);
        cmd.arg("plugin").args(args).stdin(Stdio::null());
        for (key, _) in std::env::vars() {
            if key.starts_with("CTXGUARD_")
                || key.starts_with("CLAUDE")
                || key.starts_with("ANTHROPIC")
            {
                cmd.env_remove(key);
            }
        }
        let out = cmd
            .env("HOME", self.env.home())
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .output()
            .expect("running claude plugin");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "claude plugin {args:?}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }
}

/// Every file named `name` under `dir`.
fn find(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(find(&path, name));
        } else if entry.file_name() == name {
            found.push(path);
        }
    }
    found
}

#[test]
fn ship_the_plugin_from_a_marketplace_downloads_the_binary_and_its_hooks_run() {
    let Some(release) = release() else {
        return;
    };
    let Some(client) = client_at(VERSION) else {
        return;
    };
    // 940k of the default model's 1M: the nudge is due at the first tool call that sees it.
    let Some(mut rig) = Rig::new(2, 940_000) else {
        return;
    };
    rig.client = client;
    let server = Serve::start(&release.dist, rig.env.dir.path().join("server.log"));

    // The repository as a marketplace (what `claude plugin marketplace add ctxguard/ctxguard`
    // clones), with the pins of the release being served.
    let market = rig.env.dir.path().join("market place");
    plugin_copy(release, &market);
    let added = rig.plugin(&["marketplace", "add", market.to_str().unwrap()]);
    assert!(added.contains("ctxguard"), "{added}");
    let installed = rig.plugin(&["install", "ctxguard@ctxguard"]);
    assert!(installed.contains("ctxguard@ctxguard"), "{installed}");

    // No ctxguard anywhere the launcher looks first.
    let path = std::env::var_os("PATH").unwrap_or_default();
    let path = std::env::join_paths(
        std::env::split_paths(&path).filter(|dir| !dir.join("ctxguard").exists()),
    )
    .unwrap();
    let path = path.to_str().unwrap();
    assert!(!Path::new("/usr/local/bin/ctxguard").exists());
    let settings = rig.env.dir.path().join("empty.json");
    fs::write(&settings, "{}").unwrap();
    let start = Instant::now();
    let out = rig.claude_with(
        &settings,
        "run two commands",
        None,
        &[],
        &[("CTXGUARD_DOWNLOAD_URL", &server.url), ("PATH", path)],
    );
    let took = start.elapsed();
    let session = out["session_id"].as_str().unwrap();

    // Downloaded once, into the data folder the client gives the plugin, as packaged.
    assert_eq!(server.gets(&release.archive()), 1);
    let bins = find(&rig.env.home().join(".claude/plugins/data"), "ctxguard");
    assert_eq!(bins.len(), 1, "{bins:?}");
    assert!(bins[0].ends_with("bin/ctxguard"), "{bins:?}");
    assert_eq!(
        fs::read(&bins[0]).unwrap(),
        fs::read(env!("CARGO_BIN_EXE_ctxguard")).unwrap()
    );
    // And the session's hooks ran it: the nudge reached the model once, and the marker says so.
    let requests = rig.api.requests();
    assert_eq!(
        count(requests.last().unwrap(), ANY_NUDGE),
        1,
        "{requests:?}"
    );
    assert_eq!(rig.env.marker(session)["state"], "nudged");
    // No hook held the session up for long: the whole run, three requests and every hook,
    // well within one hook timeout.
    assert!(took.as_secs() < 60, "{took:?}");
}
