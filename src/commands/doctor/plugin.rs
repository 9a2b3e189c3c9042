//! The check of ctxguard as the Claude Code plugin: the running binary is the one the plugin's
//! launcher downloaded (and `ctxguard` on the user's side its link), the plugin that runs the
//! hooks is enabled, and no link is left pointing at a plugin's binary that is gone.

use super::{finding, Context, Finding, Status};
use crate::commands::plugin;

/// What doctor says of the plugin: nothing when neither the binary nor the settings involve it.
pub fn plugin(ctx: &Context) -> Vec<Finding> {
    let enabled = plugin::enabled(&ctx.client);
    let mut out = Vec::new();
    let link = ctx.plugin_link.as_ref();
    let by_link = link
        .filter(|(_, target)| ctx.plugin_binary.as_ref() == Some(target))
        .map(|(link, _)| format!(", run as its link {}", link.display()))
        .unwrap_or_default();
    match (&ctx.plugin_binary, enabled.first()) {
        (Some(exe), Some((name, file))) => out.push(finding(
            "plugin",
            Status::Ok,
            format!(
                "this ctxguard is the one the plugin {name} downloaded ({}{by_link}); the plugin \
                 is enabled in {} and registers the hooks",
                exe.display(),
                file.path.display()
            ),
            None,
        )),
        (Some(exe), None) => out.push(finding(
            "plugin",
            Status::Warn,
            format!(
                "this ctxguard is the one the ctxguard plugin downloaded ({}{by_link}), but no \
                 ctxguard plugin is enabled in Claude Code's settings: its hooks do not run",
                exe.display()
            ),
            Some("run `claude plugin enable ctxguard@ctxguard` (or `claude plugin install ctxguard@ctxguard`)"),
        )),
        (None, Some((name, file))) => out.push(finding(
            "plugin",
            Status::Ok,
            format!(
                "the plugin {name} is enabled (in {}) and registers the hooks",
                file.path.display()
            ),
            None,
        )),
        (None, None) => {}
    }
    if let Some((link, target)) = link.filter(|(_, target)| !target.exists()) {
        out.push(finding(
            "plugin",
            Status::Warn,
            format!(
                "{} links to the plugin's binary {}, which is gone (the plugin was uninstalled)",
                link.display(),
                target.display()
            ),
            Some(&format!("remove the link: rm {}", link.display())),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::super::tests::{ctx, lines};
    use super::*;
    use crate::client::Scope;

    #[test]
    fn the_plugins_binary_and_the_plugin_enabled() {
        let on = r#"{"enabledPlugins": {"ctxguard@ctxguard": true}}"#;
        let bin = PathBuf::from("/home/u/.claude/plugins/data/ctxguard-ctxguard/bin/ctxguard");
        let link = PathBuf::from("/home/u/.local/bin/ctxguard");

        let mut both = ctx(&[(Scope::User, on)]);
        both.plugin_binary = Some(bin.clone());
        both.plugin_link = Some((link.clone(), bin.clone()));
        // (The binary is not on this machine: the link is also said to point at nothing.)
        assert_eq!(
            lines(&plugin(&both)),
            [
                "ok: this ctxguard is the one the plugin ctxguard@ctxguard downloaded \
                 (/home/u/.claude/plugins/data/ctxguard-ctxguard/bin/ctxguard, run as its link \
                 /home/u/.local/bin/ctxguard); the plugin is enabled in \
                 /home/u/.claude/settings.json and registers the hooks",
                "warn: /home/u/.local/bin/ctxguard links to the plugin's binary \
                 /home/u/.claude/plugins/data/ctxguard-ctxguard/bin/ctxguard, which is gone (the \
                 plugin was uninstalled)",
            ]
        );

        let mut off = ctx(&[(Scope::User, "{}")]);
        off.plugin_binary = Some(bin);
        let said = plugin(&off);
        assert_eq!(said.len(), 1);
        assert_eq!(said[0].status, Status::Warn);
        assert!(said[0].message.contains("no ctxguard plugin is enabled"));

        assert!(plugin(&ctx(&[(Scope::User, "{}")])).is_empty());
        let enabled_only = plugin(&ctx(&[(Scope::User, on)]));
        assert_eq!(
            lines(&enabled_only),
            ["ok: the plugin ctxguard@ctxguard is enabled (in /home/u/.claude/settings.json) and \
              registers the hooks"]
        );
    }
}
