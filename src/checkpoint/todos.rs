//! The checkpoint's todo list. Claude Code has two mechanisms: `TodoWrite` sends the whole list
//! each time, `TaskCreate`/`TaskUpdate` change one task at a time; whichever was used last wins.
//! Either way the list holds at most [`MAX_TODOS`] items.

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::bounded;
use super::{Todo, MAX_TODOS, STATUS_CHARS, TODO_CHARS};
use crate::text::{cut, sanitize};

/// Task ids are small numbers; this only bounds a hostile one.
const TASK_ID_CHARS: usize = 40;

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
    if s.starts_with('"') {
        serde_json::from_str::<String>(s).ok()
    } else {
        serde_json::from_str::<serde_json::Number>(s)
            .ok()
            .map(|n| n.to_string())
    }
}

fn subject(s: &str) -> String {
    cut(&sanitize(s, true), TODO_CHARS)
}

fn status(s: &str) -> String {
    cut(&sanitize(s, true), STATUS_CHARS)
}

#[derive(Debug)]
struct Task {
    /// Ours, to find the task again when its TaskCreate result arrives.
    key: u64,
    /// Claude Code's, once known: what TaskUpdate names.
    id: Option<String>,
    todo: Todo,
}

#[derive(Debug, Default)]
pub(super) struct Todos {
    list: Option<Vec<Todo>>,
    tasks: Vec<Task>,
    next_key: u64,
    /// Which of the two mechanisms was used last.
    tasks_newer: bool,
}

impl Todos {
    /// A TodoWrite call's input: the newest list replaces the last.
    pub(super) fn write(&mut self, input: &str) {
        let Ok(todos) = serde_json::from_str::<TodoWriteInput>(input) else {
            return;
        };
        self.list = Some(
            todos
                .todos
                .into_iter()
                .map(|t| Todo {
                    content: subject(&t.content),
                    status: status(&t.status),
                })
                .collect(),
        );
        self.tasks_newer = false;
    }

    /// A TaskCreate call's input. Returns the new task's key for [`Todos::created`]: its id
    /// comes later, in the call's result.
    pub(super) fn create(&mut self, input: &str) -> Option<u64> {
        let task = serde_json::from_str::<TaskInput>(input).ok()?;
        let todo = Todo {
            content: subject(&task.subject.unwrap_or_default()),
            status: "pending".into(),
        };
        self.tasks_newer = true;
        Some(self.add(None, todo))
    }

    /// A TaskCreate result: "Task #3 created successfully: ..." carries the id TaskUpdate will
    /// use.
    pub(super) fn created(&mut self, key: u64, result: &str) {
        let Some(num) = result
            .split_once('#')
            .map(|(_, rest)| {
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                cut(&digits, TASK_ID_CHARS) // as TaskUpdate's id is cut
            })
            .filter(|n| !n.is_empty())
        else {
            return;
        };
        if let Some(task) = self.tasks.iter_mut().find(|t| t.key == key) {
            task.id = Some(num);
        }
    }

    /// A TaskUpdate call's input: a new status or subject, or `deleted`.
    pub(super) fn update(&mut self, input: &str) {
        let Ok(update) = serde_json::from_str::<TaskInput>(input) else {
            return;
        };
        let Some(id) = update.task_id.and_then(task_id) else {
            return;
        };
        let id = cut(&sanitize(&id, true), TASK_ID_CHARS);
        let new_status = update.status.as_deref().map(status);
        let known = |t: &Task| t.id.as_deref() == Some(id.as_str());
        if new_status.as_deref() == Some("deleted") {
            self.tasks.retain(|t| !known(t));
        } else if let Some(task) = self.tasks.iter_mut().find(|t| known(t)) {
            if let Some(s) = new_status {
                task.todo.status = s;
            }
            if let Some(s) = update.subject {
                task.todo.content = subject(&s);
            }
        } else {
            // Created before the last compaction: known by id only.
            let content = update
                .subject
                .map(|s| subject(&s))
                .unwrap_or_else(|| format!("task #{id}"));
            let status = new_status.unwrap_or_else(|| "pending".into());
            self.add(Some(id), Todo { content, status });
        }
        self.tasks_newer = true;
    }

    /// Adds a task; when the list is full, the oldest completed one goes first, else the
    /// oldest.
    fn add(&mut self, id: Option<String>, todo: Todo) -> u64 {
        if self.tasks.len() >= MAX_TODOS {
            let oldest = self
                .tasks
                .iter()
                .position(|t| !t.todo.is_open())
                .unwrap_or(0);
            self.tasks.remove(oldest);
        }
        let key = self.next_key;
        self.next_key += 1;
        self.tasks.push(Task { key, id, todo });
        key
    }

    /// The list: in progress first, then pending, then completed, in list order within each.
    pub(super) fn finish(self) -> Vec<Todo> {
        let mut todos: Vec<Todo> = if self.tasks_newer {
            self.tasks.into_iter().map(|t| t.todo).collect()
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
        todos.created(first, "Task #1 created successfully: first");
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
        todos.created(a, "Task #1 created");
        let b = create(&mut todos, "b");
        // Task 1 is deleted before task b's result arrives: b must still get its id.
        todos.update(r#"{"taskId": "1", "status": "deleted"}"#);
        todos.created(b, "Task #2 created");
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
}
