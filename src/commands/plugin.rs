//! ctxguard installed as the Claude Code plugin, as the manual commands see it: whether the
//! running binary is the one the plugin's launcher downloaded (`<plugins>/data/<id>/bin/ctxguard`,
//! `plugin/hooks/run.sh`), the link it made for the user (`~/.local/bin/ctxguard`), where the
//! plugin is enabled; and taking it all out for `uninstall --purge`: the link, then the plugin
//! through `claude plugin uninstall`, which removes its data folder and the binary in it.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};

use crate::client::{self, SettingsFile};
use crate::config::Env;
use crate::files;

/// The plugin's id in the marketplace the repository serves.
const ID: &str = "ctxguard@ctxguard";

/// How long `claude plugin uninstall` may take.
const LIMIT: Duration = Duration::from_secs(60);

/// Whether `path` is a binary the plugin's launcher put in place: `bin/ctxguard` in a plugin's
/// data folder (`…/data/ctxguard-<marketplace>/`, the client's name for `ctxguard@<marketplace>`).
fn is_plugins_binary(path: &Path) -> bool {
    let name = |p: Option<&Path>| {
        p.and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
    };
    let bin = path.parent();
    let folder = bin.and_then(Path::parent);
    let data = folder.and_then(Path::parent);
    name(Some(path)).is_some_and(|n| n == "ctxguard" || n == "ctxguard.exe")
        && name(bin).as_deref() == Some("bin")
        && name(folder).is_some_and(|n| n.starts_with("ctxguard"))
        && name(data).as_deref() == Some("data")
}

/// The running binary, resolved, when it is the plugin's.
pub fn running() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let exe = files::canonicalize(&exe).unwrap_or(exe);
    is_plugins_binary(&exe).then_some(exe)
}

/// The link the launcher made, `~/.local/bin/ctxguard` pointing at a plugin's binary (which
/// may be gone), and where it points.
pub fn link(home: Option<&Path>) -> Option<(PathBuf, PathBuf)> {
    let link = home?.join(".local/bin/ctxguard");
    let meta = std::fs::symlink_metadata(&link).ok()?;
    if !meta.file_type().is_symlink() {
        return None;
    }
    let target = std::fs::read_link(&link).ok()?;
    is_plugins_binary(&target).then_some((link, target))
}

/// The ctxguard plugins turned on, by name (`ctxguard@<marketplace>`), with the file that does.
pub fn enabled(settings: &client::Settings) -> Vec<(&str, &SettingsFile)> {
    settings
        .enabled_plugins()
        .into_iter()
        .filter(|(name, _)| name.split('@').next() == Some("ctxguard"))
        .collect()
}

/// The client's settings for the current directory, read as doctor reads them.
pub fn client_settings(env: &Env) -> client::Settings {
    let project = std::env::current_dir().ok();
    let locations = client::locations(
        env.home.as_deref(),
        project.as_deref(),
        Path::new(client::MANAGED_SETTINGS),
    );
    client::Settings::read(locations, env.client().clone())
}

/// `uninstall --purge` for the plugin: its link taken out, then the plugin itself (each one
/// enabled, else [`ID`] when this binary is the plugin's) through `claude plugin uninstall`,
/// which removes its data folder too. Says what it did, or what is left to run and why.
pub fn purge(env: &Env, dry_run: bool) -> Result<()> {
    let settings = client_settings(env);
    // Each with the scope it was installed at, as `claude plugin uninstall --scope` names it.
    let mut names: Vec<(String, &str)> = enabled(&settings)
        .into_iter()
        .map(|(name, file)| {
            let scope = match file.scope {
                client::Scope::Project => "project",
                client::Scope::Local => "local",
                _ => "user",
            };
            (name.to_string(), scope)
        })
        .collect();
    let link = link(env.home.as_deref());
    if names.is_empty() && (running().is_some() || link.is_some()) {
        names.push((ID.to_string(), "user"));
    }
    let verb = if dry_run { "would remove" } else { "removed" };
    if let Some((link, target)) = &link {
        if !dry_run {
            std::fs::remove_file(link).with_context(|| format!("removing {}", link.display()))?;
        }
        println!(
            "{verb} {}, the plugin's link to {}",
            link.display(),
            target.display()
        );
    }
    for (name, scope) in &names {
        let command = match *scope {
            "user" => format!("claude plugin uninstall {name}"),
            _ => format!("claude plugin uninstall {name} --scope {scope}"),
        };
        if dry_run {
            println!("would run `{command}` (the plugin, its data folder and its binary)");
            continue;
        }
        let claude = match super::doctor::version::client(env, None)? {
            super::doctor::version::Client::Version(path, _)
            | super::doctor::version::Client::Unknown(path, _) => path,
            super::doctor::version::Client::NotFound => {
                println!(
                    "the plugin {name} is still installed: no `claude` on PATH to uninstall it; \
                     run `{command}`"
                );
                continue;
            }
        };
        match uninstall_with(&claude, name, scope) {
            Ok(()) => {
                println!("ran `{command}`: the plugin, its data folder and its binary are gone");
            }
            Err(e) => {
                println!("the plugin {name} may still be installed ({e:#}); run `{command}`");
            }
        }
    }
    Ok(())
}

/// `claude plugin uninstall NAME --scope SCOPE`, bounded, with everything it starts.
fn uninstall_with(claude: &Path, name: &str, scope: &str) -> Result<()> {
    let mut command = Command::new(claude);
    command
        .args(["plugin", "uninstall", name, "--scope", scope])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (mut child, group) = crate::process::spawn_group(command)
        .with_context(|| format!("running {}", claude.display()))?;
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if start.elapsed() > LIMIT {
            group.kill(&mut child);
            let _ = child.wait();
            anyhow::bail!("it did not finish within {} seconds", LIMIT.as_secs());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    if status.success() {
        return Ok(());
    }
    let mut said = String::new();
    for stream in [
        child.stdout.take().map(|s| Box::new(s) as Box<dyn Read>),
        child.stderr.take().map(|s| Box::new(s) as Box<dyn Read>),
    ]
    .into_iter()
    .flatten()
    {
        let _ = stream.take(4096).read_to_string(&mut said);
    }
    let said = crate::text::cut(&crate::text::sanitize(said.trim(), true), 300);
    anyhow::bail!("it exited with {status}: {said}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plugins_binary_is_known_by_its_place() {
        for ours in [
            "/home/u/.claude/plugins/data/ctxguard-ctxguard/bin/ctxguard",
            "/home/u/.claude/plugins/data/ctxguard-tools/bin/ctxguard",
            "/c/cache/data/ctxguard-ctxguard/bin/ctxguard.exe",
        ] {
            assert!(is_plugins_binary(Path::new(ours)), "{ours}");
        }
        for theirs in [
            "/home/u/.local/bin/ctxguard",
            "/home/u/.claude/plugins/data/other-x/bin/ctxguard",
            "/home/u/.claude/plugins/data/ctxguard-ctxguard/ctxguard",
            "/home/u/.claude/plugins/cache/ctxguard/bin/ctxguard",
            "/home/u/.claude/plugins/data/ctxguard-ctxguard/bin/other",
        ] {
            assert!(!is_plugins_binary(Path::new(theirs)), "{theirs}");
        }
    }
}
