//! `install --client codex` and `uninstall --client codex`: ctxguard's hooks in Codex CLI's
//! `$CODEX_HOME/hooks.json` (default `~/.codex`), and, only with `--trust`, their trust in
//! `config.toml`. The edits are `crate::codex::hooks`'s; here is the I/O, with the rules of the
//! Claude Code install: every file read bounded and only when regular, a backup before each
//! change (the first and the newest kept), atomic replacement with the file's permissions, a
//! record of the files install created so that uninstall removes them when nothing else is in
//! them. `hooks.json` is written back as 2-space JSON; `config.toml` is edited with `toml_edit`,
//! which keeps the user's comments and layout.
//!
//! Trust is keyed by the canonical `CODEX_HOME` (Codex resolves a link there, not at
//! `hooks.json` itself) and the handler's place: moving a hook of the user's (an uninstall that
//! takes out a group before it) moves its trust along, so it stays trusted.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use serde_json::Value;
use toml_edit::DocumentMut;

use super::{
    backups, created_path, directory, file_name, forget_created, keep_line_endings, read_json,
    remove_created, render, report_backup, this_binary, write_backup,
};
use crate::codex::hooks::{self, Handler, Trust};
use crate::codex::{self as codex_files, MAX_CONFIG_BYTES};
use crate::config::Env;
use crate::files;
use crate::hook_list::{self, CODEX_HOOKS};
use crate::settings;
use crate::shell::{shell_quote, shell_words};

/// Where Codex keeps what install edits.
struct CodexFiles {
    /// `$CODEX_HOME` or `~/.codex`, as found, and how it was found.
    home: PathBuf,
    from: &'static str,
    /// `hooks.json` as Codex names it in trust keys.
    key_file: String,
    /// The files written (a link followed to its target).
    hooks: PathBuf,
    config: PathBuf,
}

/// A link is followed, so that it survives the atomic replacement.
fn followed(path: PathBuf) -> Result<PathBuf> {
    if fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
        return files::canonicalize(&path)
            .with_context(|| format!("following the link {}", path.display()));
    }
    Ok(path)
}

fn locate(env: &Env, create: bool) -> Result<CodexFiles> {
    let home = env
        .codex_home()
        .ok_or_else(|| anyhow!("cannot find Codex's directory: set CODEX_HOME (or HOME)"))?;
    if create {
        fs::create_dir_all(&home).with_context(|| format!("creating {}", home.display()))?;
    }
    let real = files::canonicalize(&home)
        .or_else(|_| std::path::absolute(&home))
        .with_context(|| format!("finding the absolute path of {}", home.display()))?;
    let key_file = hooks::hooks_path(&real)
        .to_str()
        .ok_or_else(|| anyhow!("Codex's directory {} is not UTF-8", real.display()))?
        .to_string();
    Ok(CodexFiles {
        hooks: followed(hooks::hooks_path(&home))?,
        config: followed(codex_files::config_path(&home))?,
        from: if env.codex_home_var.is_some() {
            "CODEX_HOME"
        } else {
            "the default, without CODEX_HOME"
        },
        key_file,
        home,
    })
}

/// `config.toml` as text and parsed; a missing file is an empty document.
fn read_config(path: &Path) -> Result<(Option<String>, DocumentMut)> {
    let what = "Codex's config.toml";
    let Some(bytes) = files::read_regular(path, what, MAX_CONFIG_BYTES)? else {
        return Ok((None, DocumentMut::new()));
    };
    let text = String::from_utf8(bytes).map_err(|_| {
        anyhow!(
            "{what} {} is not UTF-8 text; fix it first (ctxguard left it untouched)",
            path.display()
        )
    })?;
    let doc = text.parse::<DocumentMut>().map_err(|e| {
        anyhow!(
            "{what} {} is not valid TOML ({}); fix it first (ctxguard left it untouched)",
            path.display(),
            e.to_string().trim()
        )
    })?;
    Ok((Some(text), doc))
}

/// The ctxguard hook subcommand a command line runs: by the rules every caller shares
/// (`settings::runs_ctxguard`), or as the exact binary install writes (or another path of it).
fn recogniser<'a>(
    bin: &'a str,
    same: &'a dyn Fn(&str) -> bool,
) -> impl Fn(&str) -> Option<String> + 'a {
    move |line: &str| {
        let named = hook_list::HOOKS
            .iter()
            .find(|h| settings::runs_ctxguard(line, h.name));
        if let Some(h) = named {
            return Some(h.name.to_string());
        }
        let words = shell_words(line)?;
        let (program, rest) = words.split_first()?;
        let sub = hook_list::find(rest.first()?)?;
        (program == bin || same(program)).then(|| sub.name.to_string())
    }
}

/// ctxguard's handlers for the hooks install registers (not one added by hand for another
/// event), in the file's order.
fn registered(doc: &Value, sub_of: hooks::SubOf) -> Vec<Handler> {
    hooks::ours(doc, sub_of)
        .into_iter()
        .filter(|(h, sub)| {
            CODEX_HOOKS
                .iter()
                .any(|c| c.event == h.at.event && c.command == sub)
        })
        .map(|(h, _)| h)
        .collect()
}

/// Writes `new` to `path` after a backup of `old` (a new file is recorded as install's), with
/// the file's permissions (`mode` for a new one); the backup.
fn write(path: &Path, old: Option<&str>, new: &str, mode: u32) -> Result<Option<PathBuf>> {
    let dir = directory(path)?;
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mode = files::mode_of(path).unwrap_or(mode);
    let backup = old
        .map(|text| write_backup(path, text, mode, chrono::Local::now()))
        .transpose()?;
    if old.is_none() {
        let created = created_path(path)?;
        files::replace_with_mode(
            &created,
            format!(
                "ctxguard install created {} beside this one (there was none); ctxguard \
                 uninstall removes it, and this, when nothing else is in it\n",
                file_name(path)
            )
            .as_bytes(),
            mode,
        )
        .with_context(|| format!("writing {}", created.display()))?;
    }
    files::replace_with_mode(path, keep_line_endings(old, new).as_bytes(), mode)?;
    Ok(backup)
}

/// Prints the changes to `path` (or, with `dry_run`, the diff) and writes it.
fn save(
    path: &Path,
    (old, old_render): (Option<&str>, &str),
    new: &str,
    changes: &[String],
    dry_run: bool,
    mode: u32,
) -> Result<()> {
    if dry_run {
        println!("would change {}:", path.display());
        print!("{}", settings::diff(old.map_or("", |_| old_render), new));
        return Ok(());
    }
    let backup = write(path, old, new, mode)?;
    println!("updated {}:", path.display());
    for c in changes {
        println!("  - {c}");
    }
    if let Some(b) = backup {
        report_backup(path, &b);
    }
    Ok(())
}

/// The text of the newest backup of `path` whose content renders as `new` does: uninstall gives
/// back the user's own bytes, not a re-rendering, when nothing else changed since. An empty
/// `"hooks": {}` in the backup counts as none (uninstall takes out the `hooks` it emptied).
fn backup_like(path: &Path, new: &str) -> Option<String> {
    let list = backups(path).ok()?;
    list.iter().rev().find_map(|b| {
        let (text, mut value) = read_json(b, "backup", hooks::MAX_HOOKS_BYTES).ok()?;
        if let Some(root) = value.as_object_mut() {
            if root
                .get("hooks")
                .and_then(Value::as_object)
                .is_some_and(serde_json::Map::is_empty)
            {
                root.shift_remove("hooks");
            }
        }
        (render(&value).ok()? == new).then_some(text?)
    })
}

/// How each of ctxguard's hooks stands in `config`.
fn trust_of(config: &DocumentMut, key_file: &str, ours: &[Handler]) -> Vec<(Handler, Trust)> {
    ours.iter()
        .map(|h| {
            let hash = h.hash.as_deref().unwrap_or_default();
            (h.clone(), hooks::trust(config, &h.at.key(key_file), hash))
        })
        .collect()
}

/// What to tell the user about the hooks Codex will skip.
fn trust_advice(files: &CodexFiles, status: &[(Handler, Trust)]) {
    let skipped: Vec<&(Handler, Trust)> = status
        .iter()
        .filter(|(_, t)| *t != Trust::Trusted)
        .collect();
    if skipped.is_empty() {
        println!(
            "Codex trusts all {} of ctxguard's hooks (config.toml holds their hashes)",
            status.len()
        );
        return;
    }
    println!(
        "Codex runs a hook of hooks.json only once you trust it, and skips the others without a \
         word; {} of ctxguard's are not trusted yet:",
        skipped.len()
    );
    for (h, t) in &skipped {
        let why = match t {
            Trust::Modified => " (changed since it was trusted)",
            Trust::Disabled => " (turned off: enabled = false)",
            _ => "",
        };
        println!(
            "  {:<16} {}{why}",
            h.at.event,
            h.command.as_deref().unwrap_or_default()
        );
    }
    println!(
        "To review and trust them: start `codex`, type /hooks and trust each one. Or trust them \
         from here: `ctxguard install --client codex --trust` writes their hashes to {}. \
         `ctxguard doctor` says which are trusted.",
        files.config.display()
    );
}

pub fn install(dry_run: bool, trust: bool) -> Result<()> {
    let env = Env::from_process();
    let files = locate(&env, !dry_run)?;
    let (bin, same) = this_binary(&env)?;
    let sub_of = recogniser(&bin, &same);
    println!("Codex CLI: {} ({})", files.home.display(), files.from);
    // Both files are read (and refused) before either is written.
    let (hooks_old, mut doc) =
        read_json(&files.hooks, "Codex's hooks.json", hooks::MAX_HOOKS_BYTES)?;
    let config = match read_config(&files.config) {
        Err(e) if trust => return Err(e),
        config => config,
    };
    // A config.toml that parses but cannot take a trust entry (its `hooks` an inline table, a
    // value) is refused before hooks.json is written: no hooks left registered and untrusted.
    if let (true, Ok((_, parsed))) = (trust, &config) {
        let mut probe = parsed.clone();
        hooks::set_trusted(&mut probe, "ctxguard-probe", "sha256:0").map_err(|e| {
            anyhow!(
                "{}: {e}; cannot record trust there, nothing written",
                files.config.display()
            )
        })?;
    }
    let edit = hooks_edit(
        &files,
        hooks_old.as_deref(),
        &mut doc,
        &bin,
        &sub_of,
        dry_run,
    )?;
    let (config_old, mut config) = match config {
        Ok(c) => c,
        Err(e) => {
            println!("notice: cannot say which hooks Codex trusts: {e:#}");
            if dry_run {
                println!("(dry run: nothing written)");
            }
            return Ok(());
        }
    };
    let config_render = config.to_string();
    let mut changes = moved_trust(&mut config, &files.key_file, &edit)?;
    let ours = registered(&doc, &sub_of);
    if trust {
        for h in &ours {
            let key = h.at.key(&files.key_file);
            let hash = h.hash.as_deref().unwrap_or_default();
            if hooks::set_trusted(&mut config, &key, hash)
                .map_err(|e| anyhow!("{}: {e}; left untouched", files.config.display()))?
            {
                changes.push(format!(
                    "{}: trusted `{}`",
                    h.at.event,
                    h.command.as_deref().unwrap_or_default()
                ));
            }
        }
    }
    if changes.is_empty() {
        if trust {
            println!(
                "ctxguard's hooks are already trusted in {} (nothing changed)",
                files.config.display()
            );
        }
    } else {
        save(
            &files.config,
            (config_old.as_deref(), &config_render),
            &config.to_string(),
            &changes,
            dry_run,
            0o600,
        )?;
    }
    if dry_run {
        println!("(dry run: nothing written)");
    } else {
        trust_advice(&files, &trust_of(&config, &files.key_file, &ours));
    }
    Ok(())
}

/// Registers the hooks in `doc` (read from `old`) and writes it; the edit, for the trust that
/// moves with it.
fn hooks_edit(
    files: &CodexFiles,
    old: Option<&str>,
    doc: &mut Value,
    bin: &str,
    sub_of: hooks::SubOf,
    dry_run: bool,
) -> Result<hooks::Edit> {
    let lines: Vec<String> = CODEX_HOOKS
        .iter()
        .map(|h| format!("{} {}", shell_quote(bin), h.command))
        .collect();
    let wanted: Vec<(&str, &str, &str)> = CODEX_HOOKS
        .iter()
        .zip(&lines)
        .map(|(h, line)| (h.event, h.command, line.as_str()))
        .collect();
    let old_render = render(doc)?;
    let edit = hooks::install(doc, &wanted, sub_of)
        .map_err(|e| anyhow!("{}: {e}; left untouched", files.hooks.display()))?;
    if edit.changes.is_empty() {
        println!(
            "ctxguard is already installed in {} (nothing changed)",
            files.hooks.display()
        );
    } else {
        save(
            &files.hooks,
            (old, &old_render),
            &render(doc)?,
            &edit.changes,
            dry_run,
            0o644,
        )?;
    }
    Ok(edit)
}

/// Moves the trust of the user's hooks the edit moved, and takes out the trust of the hooks it
/// removed; what changed.
fn moved_trust(
    config: &mut DocumentMut,
    key_file: &str,
    edit: &hooks::Edit,
) -> Result<Vec<String>> {
    let mut changes = Vec::new();
    for h in &edit.removed {
        if hooks::take_state(config, &h.at.key(key_file)).is_some() {
            changes.push(format!(
                "{}: removed the trust of `{}`",
                h.at.event,
                h.command.as_deref().unwrap_or_default()
            ));
        }
    }
    for (from, to) in &edit.moved {
        let (from, to) = (from.key(key_file), to.key(key_file));
        if hooks::move_state(config, &from, &to).map_err(|e| anyhow!("config.toml: {e}"))? {
            changes.push(format!(
                "the trust of your hook at {from} moved with it, to {to}"
            ));
        }
    }
    Ok(changes)
}

pub fn uninstall(dry_run: bool) -> Result<()> {
    let env = Env::from_process();
    let files = locate(&env, false)?;
    let (Some(old), mut doc) =
        read_json(&files.hooks, "Codex's hooks.json", hooks::MAX_HOOKS_BYTES)?
    else {
        println!(
            "no Codex hooks.json at {} (nothing to remove)",
            files.hooks.display()
        );
        return Ok(());
    };
    let (bin, same) = this_binary(&env)?;
    let sub_of = recogniser(&bin, &same);
    let config = if files.config.exists() {
        Some(read_config(&files.config)?)
    } else {
        None
    };
    let old_render = render(&doc)?;
    let edit = hooks::uninstall(&mut doc, &sub_of)
        .map_err(|e| anyhow!("{}: {e}; left untouched", files.hooks.display()))?;
    if edit.removed.is_empty() {
        println!(
            "ctxguard is not registered in {} (nothing changed)",
            files.hooks.display()
        );
    } else if created_path(&files.hooks)?.is_file()
        && doc.as_object().is_some_and(serde_json::Map::is_empty)
    {
        remove_created(&files.hooks, &backups(&files.hooks)?, dry_run)?;
    } else {
        let new = render(&doc)?;
        let new = backup_like(&files.hooks, &new).unwrap_or(new);
        save(
            &files.hooks,
            (Some(&old), &old_render),
            &new,
            &edit.changes,
            dry_run,
            0o644,
        )?;
    }
    if !dry_run && !edit.removed.is_empty() {
        // What is left is the user's now, however it began.
        forget_created(&files.hooks)?;
    }
    if let Some((config_old, mut config)) = config {
        let config_render = config.to_string();
        let changes = moved_trust(&mut config, &files.key_file, &edit)?;
        let emptied = config.to_string().trim().is_empty();
        if changes.is_empty() {
            // Nothing of ctxguard's in it.
        } else if emptied && created_path(&files.config)?.is_file() {
            remove_created(&files.config, &backups(&files.config)?, dry_run)?;
        } else {
            save(
                &files.config,
                (config_old.as_deref(), &config_render),
                &config.to_string(),
                &changes,
                dry_run,
                0o600,
            )?;
            if !dry_run {
                forget_created(&files.config)?;
            }
        }
    }
    if dry_run {
        println!("(dry run: nothing written)");
    }
    Ok(())
}
