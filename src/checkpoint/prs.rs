//! The pull requests a session created, looked at, merged or commented on: from the client's
//! `pr-link` records, `gh pr …` commands and what they printed (a URL, a `"state":"MERGED"`),
//! and the `Merge pull request #N` lines of `git log`. Each is kept once, as `#N (state) URL`
//! with whichever parts are known, the newest last; seeing one again moves it to the end and
//! updates its state.

use crate::text::{cut, sanitize};

use super::PR_CHARS;

/// The state of a pull request seen merged in `git log`'s history: the session did not
/// necessarily merge it.
const IN_HISTORY: &str = "merged, from git log";

/// The state of a pull request whose review comments the session read (through `gh api` or
/// `gh pr view --comments`): work on it, not a glance.
const REVIEWING: &str = "review comments read";

/// A pull request as the checkpoint keeps it.
#[derive(Debug, Default, PartialEq, Eq)]
struct Pr {
    number: Option<String>,
    state: Option<String>,
    url: Option<String>,
}

impl Pr {
    fn parse(text: &str) -> Pr {
        let mut pr = Pr::default();
        // The state, in parentheses, may be several words ("merged, from git log").
        let mut rest = text.to_string();
        if let Some((before, inner)) = text.split_once('(') {
            if let Some((state, after)) = inner.split_once(')') {
                pr.state = Some(state.to_string());
                rest = format!("{before} {after}");
            }
        }
        for word in rest.split_whitespace() {
            if let Some(n) = word.strip_prefix('#').filter(|n| is_number(n)) {
                pr.number = Some(n.to_string());
            } else if word.starts_with("https://") || word.starts_with("http://") {
                pr.url = Some(word.to_string());
            }
        }
        if pr.number.is_none() {
            pr.number = pr.url.as_deref().and_then(url_number).map(str::to_string);
        }
        pr
    }

    fn render(&self) -> String {
        let parts: Vec<String> = [
            self.number.as_ref().map(|n| format!("#{n}")),
            self.state.as_ref().map(|s| format!("({s})")),
            self.url.clone(),
        ]
        .into_iter()
        .flatten()
        .collect();
        cut(&sanitize(&parts.join(" "), true), PR_CHARS)
    }

    fn same(&self, other: &Pr) -> bool {
        match (&self.number, &other.number) {
            (Some(a), Some(b)) => a == b,
            _ => self.url.is_some() && self.url == other.url,
        }
    }
}

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.len() <= 9 && s.chars().all(|c| c.is_ascii_digit())
}

/// The number at the end of a pull request's URL (`…/pull/183`).
fn url_number(url: &str) -> Option<&str> {
    let (_, n) = url.rsplit_once("/pull/")?;
    let n = n.split(['/', '#', '?']).next().unwrap_or(n);
    is_number(n).then_some(n)
}

/// Adds `pr` (`#N`, `#N (state)`, a URL, or all three) to `list`, oldest first: one entry per
/// pull request, moved to the end and its state and URL updated when seen again; the oldest
/// forgotten past `cap`.
pub(crate) fn remember(list: &mut Vec<String>, pr: &str, cap: usize) {
    let mut new = Pr::parse(pr);
    if new.number.is_none() && new.url.is_none() {
        return;
    }
    if let Some(at) = list.iter().position(|old| Pr::parse(old).same(&new)) {
        let old = Pr::parse(&list.remove(at));
        // Looking at a pull request again says less than what was done to it: one the session
        // created and then checked stays "created".
        new.state = match (new.state, old.state) {
            (Some(seen), Some(done)) if seen == "viewed" => Some(done),
            (new, old) => new.or(old),
        };
        new.url = new.url.or(old.url);
    }
    list.push(new.render());
    if list.len() > cap {
        // The oldest one the session only looked at goes first: one it created or merged is
        // never pushed out by pull requests it merely saw (a `git log` full of merges).
        let at = list.iter().position(|p| !acted_on(p)).unwrap_or(0);
        list.remove(at);
    }
}

/// What `gh pr <verb>` says it did to a pull request.
fn state_of(verb: &str) -> Option<&'static str> {
    Some(match verb {
        "create" => "created",
        "merge" => "merged",
        "close" => "closed",
        "reopen" => "reopened",
        "comment" => "commented",
        "review" => "reviewed",
        "ready" => "ready",
        "edit" => "edited",
        "view" | "checks" | "diff" | "checkout" | "status" => "viewed",
        _ => return None,
    })
}

/// The pull requests a Bash call named, oldest first (`#N (state) URL`): `gh pr <verb> N`,
/// the URLs `gh` printed, a `"state":"MERGED"` it printed, and `git log`'s merge commits
/// (printed newest first). `failed`: the call's result was an error (nothing was done, but
/// the pull request was named).
pub(super) fn in_command(command: &str, output: &str, failed: bool) -> Vec<String> {
    let mut out = Vec::new();
    // `git log`: "Merge pull request #89 from o/branch", newest first.
    let mut merged: Vec<String> = output
        .lines()
        .take(2_000)
        .filter_map(|l| {
            let (_, rest) = l.split_once("Merge pull request #")?;
            let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
            is_number(&n).then(|| format!("#{n} ({IN_HISTORY})"))
        })
        .take(8)
        .collect();
    merged.reverse();
    out.extend(merged);
    for part in command
        .lines()
        .take(200)
        .flat_map(|l| l.split(['&', ';', '|']))
    {
        let words: Vec<&str> = part.split_whitespace().collect();
        if let Some(pr) = api_call(&words, failed) {
            out.push(pr);
            continue;
        }
        let Some(at) = words.windows(2).position(|w| w == ["gh", "pr"]) else {
            continue;
        };
        let Some(verb) = words.get(at + 2) else {
            continue;
        };
        let number = words[at + 3..]
            .iter()
            .take_while(|w| !w.starts_with("--") || w.len() <= 2)
            .find_map(|w| {
                let w = w.trim_matches(|c| c == '"' || c == '\'');
                let w = w.strip_prefix('#').unwrap_or(w);
                is_number(w)
                    .then_some(w)
                    .or_else(|| url_number(w))
                    .map(str::to_string)
            })
            // `gh pr view` with no number names the current branch's pull request in what it
            // prints (`"number":169` with `--json`).
            .or_else(|| printed_number(output).filter(|_| !failed));
        let printed_state = printed_state(output);
        // `gh pr view N --comments`, `--json reviews,comments`: its review read.
        let reviewing = *verb == "view"
            && words[at + 3..]
                .iter()
                .any(|w| *w == "--comments" || (w.contains("review") && !w.starts_with("--jq")));
        let state = match (printed_state, failed) {
            (_, false) if reviewing => Some(REVIEWING),
            (Some(s), _) => Some(s),
            (None, false) => state_of(verb),
            (None, true) => Some("viewed").filter(|_| state_of(verb).is_some()),
        };
        let urls = urls(output);
        match (number, urls.is_empty()) {
            (Some(n), _) => {
                let url = urls.iter().find(|u| url_number(u) == Some(n.as_str()));
                out.push(entry(&n, state, url.map(String::as_str)));
            }
            (None, false) => {
                for url in urls {
                    if let Some(n) = url_number(&url) {
                        out.push(entry(n, state, Some(&url)));
                    }
                }
            }
            (None, true) => {}
        }
    }
    out
}

/// `gh api repos/O/R/pulls/N[/…]`: a pull request read through the API (its review comments),
/// or answered (a `POST`, a reply to a comment).
fn api_call(words: &[&str], failed: bool) -> Option<String> {
    let at = words.windows(2).position(|w| w == ["gh", "api"])?;
    let rest = &words[at + 2..];
    let path = rest.iter().find_map(|w| {
        let w = w.trim_matches(|c| c == '"' || c == '\'');
        let (_, tail) = w.split_once("/pulls/")?;
        let n: String = tail.chars().take_while(char::is_ascii_digit).collect();
        is_number(&n).then(|| (n, tail.contains("/replies") || tail.ends_with("/comments")))
    });
    let (number, comments) = path?;
    let writes = rest.iter().any(|w| {
        matches!(*w, "-f" | "-F" | "--field" | "--raw-field" | "--input")
            || w.eq_ignore_ascii_case("post")
            || w.starts_with("--method=POST")
            || w.starts_with("-XPOST")
    });
    let state = if failed {
        "viewed"
    } else if writes && comments {
        "commented"
    } else if writes {
        "edited"
    } else if comments {
        REVIEWING
    } else {
        "viewed"
    };
    Some(entry(&number, Some(state), None))
}

/// `"number":169` in what `gh pr view --json …` printed.
fn printed_number(output: &str) -> Option<String> {
    let head: String = output
        .chars()
        .take(64 * 1024)
        .filter(|c| *c != ' ')
        .collect();
    let (_, rest) = head.split_once("\"number\":")?;
    let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
    is_number(&n).then_some(n)
}

/// Did the session act on this pull request (created, merged, answered it...), rather than only
/// look at it? A `pr-link` record, with no state, is the client's note of one it created.
pub(crate) fn acted_on(pr: &str) -> bool {
    !matches!(
        Pr::parse(pr).state.as_deref(),
        Some("viewed" | "open" | IN_HISTORY)
    )
}

fn entry(number: &str, state: Option<&str>, url: Option<&str>) -> String {
    Pr {
        number: Some(number.to_string()),
        state: state.map(str::to_string),
        url: url.map(str::to_string),
    }
    .render()
}

/// `"state":"MERGED"` (or `OPEN`, `CLOSED`) in `gh pr view --json state` output, and the
/// refusal "is already closed".
fn printed_state(output: &str) -> Option<&'static str> {
    let compact: String = output
        .chars()
        .take(64 * 1024)
        .filter(|c| *c != ' ')
        .collect();
    if compact.contains("\"state\":\"MERGED\"") || output.trim() == "MERGED" {
        Some("merged")
    } else if compact.contains("\"state\":\"CLOSED\"")
        || output.trim() == "CLOSED"
        || output.contains("is already closed")
    {
        Some("closed")
    } else if compact.contains("\"state\":\"OPEN\"") || output.trim() == "OPEN" {
        Some("open")
    } else {
        None
    }
}

/// Is `url` a pull request's own page, `https://host/owner/repo/pull/N` (as `gh` prints it),
/// rather than another site's page about it (a review bot's `…/review/owner/repo/pull/N`)?
fn pull_shape(url: &str) -> bool {
    let path = url
        .split_once("://")
        .map_or(url, |(_, rest)| rest)
        .split(['?', '#'])
        .next()
        .unwrap_or_default();
    let parts: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    parts.len() >= 5
        && parts[3] == "pull"
        && is_number(parts[4])
        && parts[1..3].iter().all(|p| !p.is_empty())
}

/// The pull-request URLs in `text` (`https://github.com/o/r/pull/183`), at most a few.
fn urls(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("https://").take(64) {
        let url: String = text[at..]
            .chars()
            .take_while(|c| !c.is_whitespace() && !matches!(c, '"' | '\'' | ')' | '>' | ']'))
            .take(PR_CHARS)
            .collect();
        if url_number(&url).is_some() && pull_shape(&url) {
            let url = sanitize(&url, true);
            if !out.contains(&url) {
                out.push(url);
            }
        }
        if out.len() >= 8 {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(command: &str, output: &str) -> Vec<String> {
        in_command(command, output, false)
    }

    /// In the form of a real session's: `gh pr create` then `gh pr checks`, whose output links a
    /// review bot's page about the pull request.
    #[test]
    fn a_created_pull_request_stays_created_with_its_own_url() {
        let mut list = Vec::new();
        for pr in all(
            "gh pr create --title x --body y",
            "https://github.com/acme/kite/pull/412\n",
        )
        .into_iter()
        .chain(all(
            "sleep 20 && gh pr checks 412 2>&1",
            "Review Bot\tpass\t0\thttps://review.example.dev/review/acme/kite/pull/412\tFull review skipped",
        )) {
            remember(&mut list, &pr, 5);
        }
        assert_eq!(
            list,
            ["#412 (created) https://github.com/acme/kite/pull/412"]
        );
        assert!(!pull_shape("https://review.example.dev/review/o/r/pull/5"));
        assert!(pull_shape("https://github.example.com/o/r/pull/5/files"));
        // A later action does replace it.
        remember(&mut list, "#412 (merged)", 5);
        assert_eq!(
            list,
            ["#412 (merged) https://github.com/acme/kite/pull/412"]
        );
    }

    /// In the forms real sessions have them (written here, with invented names).
    #[test]
    fn pull_requests_from_gh_and_git_log() {
        assert_eq!(
            all(
                "cd /x && gh pr create --title \"feat(cache): rework\" --body \"$(cat <<'EOF'",
                "https://github.com/acme/kite/pull/318\nShell cwd was reset"
            ),
            ["#318 (created) https://github.com/acme/kite/pull/318"]
        );
        assert_eq!(
            all("gh pr merge 311 --squash --auto", "")[0],
            "#311 (merged)"
        );
        assert_eq!(
            all(
                "gh pr view 318 --json state,mergeCommit --jq '{state}'",
                "{\"mergeCommit\":\"7b0d4\",\"state\":\"MERGED\"}"
            ),
            ["#318 (merged)"]
        );
        assert_eq!(
            in_command(
                "gh pr merge 319 --squash --auto 2>&1",
                "Exit code 1\nGraphQL: Auto merge is not allowed",
                true
            ),
            ["#319 (viewed)"]
        );
        assert_eq!(
            all(
                "git log --oneline -20",
                "9e2a7c13 Merge pull request #41 from o/fix-a\n5d0b8f62 Merge pull request #45 from o/fix-b\n"
            ),
            ["#45 (merged, from git log)", "#41 (merged, from git log)"]
        );
        assert!(all("gh run list --limit 3", "{\"conclusion\":\"success\"}").is_empty());
    }

    /// Issue 33, class 6: pull-request work through the API, `gh pr view` with no number, a
    /// `gh` call on a later line.
    #[test]
    fn the_api_a_bare_view_and_a_later_line_name_their_pull_request() {
        assert_eq!(
            in_command(
                "gh api repos/acme/kite/pulls/169/comments --paginate",
                "[]",
                false
            ),
            ["#169 (review comments read)"]
        );
        assert_eq!(
            in_command(
                "gh api repos/o/r/pulls/172/comments/991/replies -f body='Fixed in abc123'",
                "{}",
                false
            ),
            ["#172 (commented)"]
        );
        assert_eq!(
            in_command(
                "gh pr view --json number,title,state",
                "{\"number\":169,\"state\":\"OPEN\",\"title\":\"x\"}",
                false
            ),
            ["#169 (open)"]
        );
        assert_eq!(
            in_command("cd repo\ngh pr merge 12 --squash", "", false),
            ["#12 (merged)"]
        );
        assert!(acted_on("#172 (commented)"));
        assert!(acted_on("https://github.com/o/r/pull/7"));
        assert!(!acted_on("#169 (viewed)"));
        assert!(acted_on("#169 (review comments read)"));
        assert!(!acted_on("#89 (merged, from git log)"));
        // Pull requests only seen in history never push out one the session created.
        let mut list = vec!["#121 (created) https://github.com/o/r/pull/121".to_string()];
        for n in 100..110 {
            remember(&mut list, &format!("#{n} (merged, from git log)"), 5);
        }
        assert_eq!(list[0], "#121 (created) https://github.com/o/r/pull/121");
        assert_eq!(list.len(), 5);
        assert_eq!(
            in_command("gh pr view 158 --comments", "...", false),
            ["#158 (review comments read)"]
        );
    }

    #[test]
    fn one_entry_per_pull_request_newest_last() {
        let mut list = Vec::new();
        remember(
            &mut list,
            "#233 (created) https://github.com/o/r/pull/233",
            3,
        );
        remember(&mut list, "#221 (merged)", 3);
        remember(&mut list, "#233 (merged)", 3);
        assert_eq!(
            list,
            [
                "#221 (merged)",
                "#233 (merged) https://github.com/o/r/pull/233"
            ]
        );
        remember(&mut list, "https://github.com/o/r/pull/221", 3);
        assert_eq!(list[1], "#221 (merged) https://github.com/o/r/pull/221");
        for n in 1..=5 {
            remember(&mut list, &format!("#{n}"), 3);
        }
        assert_eq!(list, ["#3", "#4", "#5"]);
        remember(&mut list, "no number", 3);
        assert_eq!(list.len(), 3);
    }
}
