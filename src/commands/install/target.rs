//! Which settings file `install` and `uninstall` edit: `--settings PATH`, the project's, or the
//! user's; a link followed where the user made it (a dotfile manager's), refused where a
//! repository did (out of the project).

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

use super::SettingsTarget;
use crate::config::Env;
use crate::files;

/// `--settings PATH`, else `.claude/settings.json` with `--project`, else the user's. A settings
/// file that is a symlink (dotfile managers make them) is followed, so the link survives the
/// atomic replacement and the file it points to is the one edited.
///
/// A project's settings come with a repository anyone may have written: with `--project`, a
/// link (the file's, or its `.claude` directory's) that leads out of the project is refused, so
/// a cloned repository can never turn a project install into a user-wide one.
pub(super) fn settings_path(target: &SettingsTarget, env: &Env) -> Result<PathBuf> {
    let path = chosen_path(target, env)?;
    if target.project && target.settings.is_none() {
        stays_in_project(&path)?;
    }
    if fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
        return files::canonicalize(&path)
            .with_context(|| format!("following the link {}", path.display()));
    }
    Ok(path)
}

/// `path` is `<project>/.claude/settings.json`: the file, or the nearest part of it that
/// exists, resolves inside the project.
fn stays_in_project(path: &Path) -> Result<()> {
    let Some(project) = path.parent().and_then(Path::parent) else {
        return Ok(());
    };
    let root = files::canonicalize(project)
        .with_context(|| format!("finding the project directory {}", project.display()))?;
    let existing = [path, path.parent().unwrap_or(path)]
        .into_iter()
        .find(|p| fs::symlink_metadata(p).is_ok());
    let Some(existing) = existing else {
        return Ok(());
    };
    // A dangling link resolves nowhere: where it points is what matters.
    let resolved = files::canonicalize(existing).or_else(|_| {
        fs::read_link(existing).map(|to| existing.parent().unwrap_or(project).join(to))
    });
    match resolved {
        Ok(real)
            if real.starts_with(&root) && !real.components().any(|c| c.as_os_str() == "..") =>
        {
            Ok(())
        }
        Ok(real) => bail!(
            "{} leads out of the project, to {}: a project's settings are the project's own, and \
             ctxguard does not follow a link a repository committed; remove the link, or \
             register for your user with `ctxguard install` (without --project)",
            existing.display(),
            real.display()
        ),
        Err(e) => Err(e).with_context(|| format!("following the link {}", existing.display())),
    }
}

fn chosen_path(target: &SettingsTarget, env: &Env) -> Result<PathBuf> {
    if let Some(p) = &target.settings {
        return Ok(p.clone());
    }
    if target.project {
        return Ok(std::env::current_dir()
            .context("finding the current directory")?
            .join(".claude")
            .join("settings.json"));
    }
    let home = env
        .home
        .as_ref()
        .ok_or_else(|| anyhow!("cannot find the home directory: pass --settings PATH"))?;
    Ok(home.join(".claude").join("settings.json"))
}
