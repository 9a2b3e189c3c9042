//! The checkpoint's todo list. Claude Code has two mechanisms: `TodoWrite` sends the whole list
//! each time, `TaskCreate`/`TaskUpdate` change one task at a time; whichever was used last wins.
//! Either way the list holds at most [`MAX_TODOS`] items.
//!
//! A call changes the list only once its result says it succeeded: a `TodoWrite` the client
//! refused (an invalid list, a tool that is disabled) or a `TaskUpdate` of an unknown task
//! changed nothing. Until its result arrives a change waits, parsed and capped; one whose result
//! never comes (the compaction started first) is applied at the end, as the newest.

use std::collections::VecDeque;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::bounded;
use super::{Todo, MAX_TODOS, STATUS_CHARS, TODO_CHARS};
use crate::text::{cut, sanitize};

/// Task ids are small numbers; this only bounds a hostile one.
const TASK_ID_CHARS: usize = 40;

/// Task subjects remembered by id, from the results of `TaskGet`/`TaskList` and the lead's
/// assignments: a task known only by its id (created by another agent, or before the boundary)
/// is listed with its subject when the transcript has it anywhere.
const MAX_NAMES: usize = 256;

/// The statuses a `TaskList` result shows (`#4 [completed] …`).
const STATUSES: &[&str] = &["pending", "in_progress", "completed"];

/// Changes waiting for their results. A result follows its call within a few lines; past this
/// many, the oldest waiting change is taken as done (its result is as good as lost).
const MAX_WAITING: usize = 16;

#[derive(Deserialize)]
struct TodoWriteInput {
    #[serde(default, deserialize_with = "first_todos")]
    todos: Vec<TodoItem>,
}

fn first_todos<'de, D: Deserializer<'de>>(de: D) -> Result<Vec<TodoItem>, D::Error> {
    bounded::first(de, MAX_TODOS)
}

#[derive(Deserialize)]
struct TodoItem {
    #[serde(default)]
    content: String,
    #[serde(default)]
    status: String,
}

#[derive(Deserialize)]
struct TaskInput<'a> {
    #[serde(default)]
    subject: Option<String>,
    /// Raw, so a huge array here is skipped, not built.
    #[serde(rename = "taskId", borrow, default)]
    task_id: Option<&'a RawValue>,
    #[serde(default)]
    status: Option<String>,
}

/// A task id given as a string or a number.
fn task_id(raw: &RawValue) -> Option<String> {
    let s = raw.get();
    let id = if s.starts_with('"') {
        serde_json::from_str::<String>(s).ok()
    } else {
        serde_json::from_str::<serde_json::Number>(s)
            .ok()
            .map(|n| n.to_string())
    }?;
    Some(cut(&sanitize(&id, true), TASK_ID_CHARS))
}

fn subject(s: &str) -> String {
    cut(&sanitize(s, true), TODO_CHARS)
}

fn status(s: &str) -> String {
    cut(&sanitize(s, true), STATUS_CHARS)
}

/// The id a `TaskCreate` result gives its task: "Task #3 created successfully: ...".
fn created_id(result: &str) -> Option<String> {
    let (_, rest) = result.split_once('#')?;
    let digits: String = rest
        .chars()
        .take_while(char::is_ascii_digit)
        .take(TASK_ID_CHARS) // as TaskUpdate's id is cut
        .collect();
    (!digits.is_empty()).then_some(digits)
}

/// What one call does to the list, parsed and capped when the call is seen.
#[derive(Debug)]
enum Change {
    Write(Vec<Todo>),
    Create(Todo),
    Update {
        id: String,
        status: Option<String>,
        subject: Option<String>,
    },
}

#[derive(Debug)]
struct Task {
    /// Claude Code's id, once known: what `TaskUpdate` names.
    id: Option<String>,
    todo: Todo,
}

#[derive(Debug, Default)]
pub(super) struct Todos {
    list: Option<Vec<Todo>>,
    tasks: Vec<Task>,
    /// Changes whose results have not arrived, oldest first, with their keys.
    waiting: VecDeque<(u64, Change)>,
    next_key: u64,
    /// Which of the two mechanisms was used last.
    tasks_newer: bool,
    /// Subjects by task id, oldest first.
    names: VecDeque<(String, String)>,
}

impl Todos {
    /// A `TodoWrite` call's input: the newest list replaces the last. Returns the key its result
    /// settles ([`Todos::settle`]).
    pub(super) fn write(&mut self, input: &str) -> Option<u64> {
        let todos = serde_json::from_str::<TodoWriteInput>(input).ok()?;
        let list = todos
            .todos
            .into_iter()
            .map(|t| Todo {
                content: subject(&t.content),
                status: status(&t.status),
                id: None,
            })
            .collect();
        Some(self.wait(Change::Write(list)))
    }

    /// A `TaskCreate` call's input. Its id comes with its result.
    pub(super) fn create(&mut self, input: &str) -> Option<u64> {
        let task = serde_json::from_str::<TaskInput>(input).ok()?;
        let todo = Todo {
            content: subject(&task.subject.unwrap_or_default()),
            status: "pending".into(),
            id: None,
        };
        Some(self.wait(Change::Create(todo)))
    }

    /// A `TaskUpdate` call's input: a new status or subject, or `deleted`.
    pub(super) fn update(&mut self, input: &str) -> Option<u64> {
        let update = serde_json::from_str::<TaskInput>(input).ok()?;
        let id = update.task_id.and_then(task_id)?;
        Some(self.wait(Change::Update {
            id,
            status: update.status.as_deref().map(status),
            subject: update.subject.as_deref().map(subject),
        }))
    }

    fn wait(&mut self, change: Change) -> u64 {
        if self.waiting.len() >= MAX_WAITING {
            if let Some((_, oldest)) = self.waiting.pop_front() {
                self.apply(oldest, None);
            }
        }
        let key = self.next_key;
        self.next_key += 1;
        self.waiting.push_back((key, change));
        key
    }

    /// The result of the call that made change `key`: applied if it succeeded, dropped if not.
    pub(super) fn settle(&mut self, key: u64, succeeded: bool, result: &str) {
        let Some(at) = self.waiting.iter().position(|(k, _)| *k == key) else {
            return;
        };
        if let Some((_, change)) = self.waiting.remove(at) {
            if succeeded {
                self.apply(change, created_id(result));
            }
        }
    }

    fn apply(&mut self, change: Change, created: Option<String>) {
        match change {
            Change::Write(list) => {
                self.list = Some(list);
                self.tasks_newer = false;
                return;
            }
            Change::Create(todo) => self.add(created, todo),
            Change::Update {
                id,
                status,
                subject,
            } => self.update_task(id, status, subject),
        }
        self.tasks_newer = true;
    }

    fn update_task(&mut self, id: String, status: Option<String>, subject: Option<String>) {
        let known = |t: &Task| t.id.as_deref() == Some(id.as_str());
        if status.as_deref() == Some("deleted") {
            self.tasks.retain(|t| !known(t));
        } else if let Some(task) = self.tasks.iter_mut().find(|t| known(t)) {
            if let Some(s) = status {
                task.todo.status = s;
            }
            if let Some(s) = subject {
                task.todo.content = s;
            }
        } else {
            // Created before the last compaction: known by id only.
            let content = subject.unwrap_or_else(|| format!("task #{id}"));
            let status = status.unwrap_or_else(|| "pending".into());
            self.add(
                Some(id),
                Todo {
                    content,
                    status,
                    id: None,
                },
            );
        }
    }

    /// Adds a task; when the list is full, the oldest completed one goes first, else the
    /// oldest.
    fn add(&mut self, id: Option<String>, todo: Todo) {
        if self.tasks.len() >= MAX_TODOS {
            let oldest = self
                .tasks
                .iter()
                .position(|t| !t.todo.is_open())
                .unwrap_or(0);
            self.tasks.remove(oldest);
        }
        self.tasks.push(Task { id, todo });
    }

    /// Remembers task `id`'s subject.
    pub(super) fn name(&mut self, id: &str, subject: &str) {
        let id = cut(&sanitize(id, true), TASK_ID_CHARS);
        let subject = self::subject(subject);
        if id.is_empty() || subject.is_empty() {
            return;
        }
        self.names.retain(|(known, _)| *known != id);
        self.names.push_back((id, subject));
        if self.names.len() > MAX_NAMES {
            self.names.pop_front();
        }
    }

    /// The subjects a `TaskGet` result (`Task #12: QA-4: Load test…`) or a `TaskList`
    /// result (`#9 [pending] API-3: Add the export endpoint [blocked by #5] (api-dev)`,
    /// one task a line) names.
    pub(super) fn learn_names(&mut self, text: &str) {
        let mut listed = Vec::new();
        for line in text.lines().take(MAX_NAMES) {
            let line = line.trim();
            let (id, rest) = if let Some(rest) = line.strip_prefix("Task #") {
                match rest.split_once(": ") {
                    Some(pair) => pair,
                    None => continue,
                }
            } else if let Some(rest) = line.strip_prefix('#') {
                let Some((id, rest)) = rest.split_once(' ') else {
                    continue;
                };
                // The status in brackets, then the subject.
                let Some((state, rest)) = rest.strip_prefix('[').and_then(|r| r.split_once("] "))
                else {
                    continue;
                };
                if STATUSES.contains(&state) {
                    listed.push((id, state));
                }
                (id, rest)
            } else {
                continue;
            };
            if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric()) {
                continue;
            }
            let mut subject = rest;
            // "[blocked by #2, #5]" and the owner "(domain-dev)" are not the subject.
            if let Some(at) = subject.rfind(" [blocked by ") {
                subject = &subject[..at];
            }
            if let Some(at) = subject.rfind(" (") {
                let owner = &subject[at + 2..];
                if owner.ends_with(')') && !owner.contains(' ') {
                    subject = &subject[..at];
                }
            }
            self.name(id, subject);
        }
        // A `TaskList` result is the list as it is now, statuses included (a lead's tasks are
        // closed by its teammates, in their own transcripts): each task of this session's list
        // takes the status listed. The others' tasks it lists (a teammate sees the whole team's)
        // are not this session's to do.
        for (id, state) in listed {
            if let Some(task) = self.tasks.iter_mut().find(|t| t.id.as_deref() == Some(id)) {
                task.todo.status = status(state);
            }
        }
    }

    /// A teammate said task `id` is done ([`super::teammates`]): this session's task of that id
    /// is completed, as a `TaskList` result listing it so would make it.
    pub(super) fn done(&mut self, id: &str) {
        if let Some(task) = self.tasks.iter_mut().find(|t| t.id.as_deref() == Some(id)) {
            task.todo.status = status("completed");
        }
    }

    /// The list: in progress first, then pending, then completed, in list order within each.
    /// Changes still waiting for their results count as done, the newest last. A task known
    /// only by its id gets its subject when one was learnt.
    pub(super) fn finish(mut self) -> Vec<Todo> {
        while let Some((_, change)) = self.waiting.pop_front() {
            self.apply(change, None);
        }
        for task in &mut self.tasks {
            let Some(id) = task.id.as_deref() else {
                continue;
            };
            if task.todo.content == format!("task #{id}") {
                if let Some((_, subject)) = self.names.iter().rev().find(|(k, _)| k == id) {
                    task.todo.content = format!("#{id} {subject}");
                }
            }
        }
        let mut todos: Vec<Todo> = if self.tasks_newer {
            self.tasks
                .into_iter()
                .map(|t| Todo { id: t.id, ..t.todo })
                .collect()
        } else {
            self.list.unwrap_or_default()
        };
        let rank = |t: &Todo| match t.status.as_str() {
            "in_progress" => 0,
            "completed" => 2,
            _ => 1,
        };
        todos.sort_by_key(rank); // stable: keeps the list order within a status
        todos
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pairs(list: &[Todo]) -> Vec<(&str, &str)> {
        list.iter()
            .map(|t| (t.content.as_str(), t.status.as_str()))
            .collect()
    }

    fn create(todos: &mut Todos, subject: &str) -> u64 {
        todos
            .create(&json!({ "subject": subject }).to_string())
            .unwrap()
    }

    #[test]
    fn todowrite_newest_list_open_first() {
        let mut todos = Todos::default();
        todos.write(r#"{"todos": [{"content": "old", "status": "pending"}]}"#);
        let newest = json!({"todos": [
            {"content": "done thing", "status": "completed", "activeForm": "x"},
            {"content": "next thing", "status": "pending"},
            {"content": "current thing", "status": "in_progress"},
        ]});
        todos.write(&newest.to_string());
        assert_eq!(
            pairs(&todos.finish()),
            [
                ("current thing", "in_progress"),
                ("next thing", "pending"),
                ("done thing", "completed")
            ]
        );
    }

    #[test]
    fn todowrite_keeps_the_first_items_each_cut() {
        let items: Vec<_> = (0..MAX_TODOS + 50)
            .map(|i| json!({"content": format!("{i} {}", "x".repeat(500)), "status": "pending".repeat(10)}))
            .collect();
        let mut todos = Todos::default();
        todos.write(&json!({ "todos": items }).to_string());
        let list = todos.finish();
        assert_eq!(list.len(), MAX_TODOS);
        assert!(list[0].content.starts_with("0 xxx"));
        assert!(list.iter().all(|t| t.content.chars().count() == TODO_CHARS));
        assert!(list
            .iter()
            .all(|t| t.status.chars().count() == STATUS_CHARS));
    }

    #[test]
    fn todowrite_with_a_bad_item_changes_nothing() {
        let mut todos = Todos::default();
        todos.write(r#"{"todos": [{"content": "keep", "status": "pending"}]}"#);
        todos.write(r#"{"todos": [{"content": "new"}, {"content": 7}]}"#);
        todos.write(r#"{"todos": null}"#);
        assert_eq!(todos.finish()[0].content, "keep");
    }

    #[test]
    fn tasks_are_capped_and_completed_ones_go_first() {
        let mut todos = Todos::default();
        let first = create(&mut todos, "first");
        todos.settle(first, true, "Task #1 created successfully: first");
        todos.update(r#"{"taskId": "1", "status": "completed"}"#);
        for i in 0..MAX_TODOS + 20 {
            create(&mut todos, &format!("task {i}"));
        }
        // Over the cap by 21 with one completed task: it goes, then the 20 oldest open ones.
        let list = todos.finish();
        assert_eq!(list.len(), MAX_TODOS);
        assert!(list.iter().all(Todo::is_open));
        assert_eq!(list[0].content, "task 20");
    }

    #[test]
    fn updates_of_unknown_tasks_are_capped_too() {
        let mut todos = Todos::default();
        for i in 0..MAX_TODOS * 3 {
            todos.update(&format!(r#"{{"taskId": {i}, "status": "in_progress"}}"#));
        }
        let list = todos.finish();
        assert_eq!(list.len(), MAX_TODOS);
        assert_eq!(list[0].content, format!("task #{}", MAX_TODOS * 2));
    }

    #[test]
    fn a_result_pairs_with_its_task_after_others_were_deleted() {
        let mut todos = Todos::default();
        let a = create(&mut todos, "a");
        todos.settle(a, true, "Task #1 created");
        let b = create(&mut todos, "b");
        // Task 1 is deleted before task b's result arrives: b must still get its id.
        todos.update(r#"{"taskId": "1", "status": "deleted"}"#);
        todos.settle(b, true, "Task #2 created");
        todos.update(r#"{"taskId": "2", "status": "in_progress"}"#);
        assert_eq!(pairs(&todos.finish()), [("b", "in_progress")]);
    }

    #[test]
    fn task_ids_are_strings_or_numbers_and_nothing_else() {
        let mut todos = Todos::default();
        let huge: Vec<u8> = vec![0; 100_000];
        todos.update(&json!({ "taskId": huge, "status": "in_progress" }).to_string());
        todos.update(r#"{"taskId": {"n": 1}, "status": "in_progress"}"#);
        todos.update(r#"{"taskId": 1.5, "status": "in_progress"}"#);
        todos.update(&json!({ "taskId": "9".repeat(100) }).to_string());
        let list = todos.finish();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].content, "task #1.5");
        assert_eq!(
            list[1].content.chars().count(),
            "task #".len() + TASK_ID_CHARS
        );
    }

    /// Results as 2.1.330 writes them: a disabled `TodoWrite`, a `TaskUpdate` of a task that does
    /// not exist (not flagged as an error), a `TaskCreate` refused for a bad input.
    #[test]
    fn changes_whose_results_failed_are_not_recorded() {
        let mut todos = Todos::default();
        let listed = todos
            .write(r#"{"todos": [{"content": "Ship it", "status": "pending", "activeForm": "Shipping"}]}"#)
            .unwrap();
        todos.settle(
            listed,
            false,
            "<tool_use_error>Error: No such tool available: TodoWrite</tool_use_error>",
        );
        let made = create(&mut todos, "Parse input");
        todos.settle(made, true, "Task #1 created successfully: Parse input");
        let refused = create(&mut todos, "Never made");
        todos.settle(
            refused,
            false,
            "<tool_use_error>InputValidationError: TaskCreate failed</tool_use_error>",
        );
        let moved = todos
            .update(r#"{"taskId": "1", "status": "in_progress"}"#)
            .unwrap();
        todos.settle(moved, true, "Updated task #1 status");
        let missing = todos
            .update(r#"{"taskId": "7", "status": "completed"}"#)
            .unwrap();
        todos.settle(missing, false, "Task not found");
        assert_eq!(pairs(&todos.finish()), [("Parse input", "in_progress")]);
    }

    #[test]
    fn changes_still_waiting_count_as_done_in_order() {
        let mut todos = Todos::default();
        let made = create(&mut todos, "Parse input");
        todos.update(r#"{"taskId": "1", "status": "completed"}"#);
        todos.settle(made, true, "Task #1 created successfully: Parse input");
        // The compaction started before this TaskCreate's result: it counts, without an id.
        create(&mut todos, "Write tests");
        // A result for a change that is not waiting (settled twice, or never made) is ignored.
        todos.settle(made, false, "");
        todos.settle(999, true, "Task #9 created");
        assert_eq!(
            pairs(&todos.finish()),
            [("Write tests", "pending"), ("Parse input", "completed")]
        );
    }

    #[test]
    fn waiting_changes_are_capped() {
        let mut todos = Todos::default();
        for i in 0..MAX_WAITING * 3 {
            create(&mut todos, &format!("task {i}"));
        }
        assert_eq!(todos.waiting.len(), MAX_WAITING);
        assert_eq!(todos.tasks.len(), MAX_WAITING * 2);
        assert_eq!(todos.finish().len(), MAX_WAITING * 3);
    }

    /// In the form of a real 2.1.42 team session: a teammate updates tasks the lead created; their
    /// subjects are in `TaskList` and `TaskGet` results.
    #[test]
    fn tasks_known_by_id_get_their_subjects() {
        let mut todos = Todos::default();
        for (id, status) in [("26", "in_progress"), ("29", "pending"), ("30", "pending")] {
            let key = todos
                .update(&format!(r#"{{"taskId": "{id}", "status": "{status}"}}"#))
                .unwrap();
            todos.settle(key, true, "Updated task status");
        }
        todos.learn_names("#26 [pending] QA-3: Smoke tests for checkout (qa-eng)\n#5 [completed] DB-5: Add row mappers (Sql ↔ Model) (db-dev)\n#28 [pending] QA-5: Screen tests [blocked by #14]");
        todos.learn_names("Task #29: QA-6: Load test for the import flow\nStatus: pending\nDescription: Test: import");
        let shown: Vec<(String, String)> = todos
            .finish()
            .into_iter()
            .map(|t| (t.content, t.status))
            .collect();
        // The TaskList came last: its status is the task's own (#26 back to pending); the tasks
        // of others it lists (#5, #28) are not added.
        let pair = |c: &str, s: &str| (c.to_string(), s.to_string());
        assert_eq!(
            shown,
            [
                pair("#26 QA-3: Smoke tests for checkout", "pending"),
                pair("#29 QA-6: Load test for the import flow", "pending"),
                pair("task #30", "pending"),
            ]
        );
        let mut todos = Todos::default();
        todos.learn_names("#5 [completed] DB-5: Add row mappers (Sql ↔ Model) (db-dev)");
        assert_eq!(
            todos.names.back().unwrap().1,
            "DB-5: Add row mappers (Sql ↔ Model)"
        );
    }
}
