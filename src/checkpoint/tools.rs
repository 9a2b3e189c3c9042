//! What a checkpoint keeps of tool calls and their results: how often each tool was used, the
//! files read and modified, the todo list the todo tools carry, and the last failures, each
//! result paired with its call by tool-use id. Inputs are read only for paths and todos; result
//! bodies only for an error's first line and a created task's id.

use std::borrow::Cow;
use std::collections::VecDeque;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::bounded::{Call, Calls, RecentList, ToolCounts};
use super::build::{result_text, Block};
use super::todos::Todos;
use super::{
    Checkpoint, Failure, ToolCount, FAILURE_CHARS, MAX_FAILURES, MAX_FILES, MAX_TOOLS, NAME_CHARS,
    PATH_CHARS,
};
use crate::text::{cut, sanitize};

#[derive(Deserialize)]
struct FileInput<'a> {
    #[serde(borrow, default)]
    file_path: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    notebook_path: Option<Cow<'a, str>>,
}

#[derive(Debug)]
pub(super) struct ToolLog {
    counts: ToolCounts,
    calls: Calls,
    modified: RecentList,
    read: RecentList,
    todos: Todos,
    failures: VecDeque<Failure>,
}

impl Default for ToolLog {
    fn default() -> ToolLog {
        ToolLog {
            counts: ToolCounts::default(),
            calls: Calls::default(),
            modified: RecentList::new(MAX_FILES),
            read: RecentList::new(MAX_FILES),
            todos: Todos::default(),
            failures: VecDeque::new(),
        }
    }
}

impl ToolLog {
    /// A `tool_use` block: counts the call, reads what its input says about files or todos,
    /// and remembers it for its result.
    pub(super) fn call(&mut self, block: &Block) {
        let name = sanitize(block.name.as_deref().unwrap_or("tool"), true);
        let name = cut(&name, NAME_CHARS);
        self.counts.count(&name);
        let mut task = None;
        if let Some(input) = block.input.map(RawValue::get) {
            match name.as_str() {
                "Read" => self.file_use(input, false),
                "Edit" | "MultiEdit" | "Write" | "NotebookEdit" => self.file_use(input, true),
                "TodoWrite" => self.todos.write(input),
                "TaskCreate" => task = self.todos.create(input),
                "TaskUpdate" => self.todos.update(input),
                _ => {}
            }
        }
        if let Some(id) = block.id.as_deref() {
            self.calls.insert(id, Call { tool: name, task });
        }
    }

    fn file_use(&mut self, input: &str, modified: bool) {
        let Ok(file) = serde_json::from_str::<FileInput>(input) else {
            return;
        };
        if let Some(path) = file.file_path.or(file.notebook_path) {
            let list = if modified {
                &mut self.modified
            } else {
                &mut self.read
            };
            list.push(cut(&sanitize(&path, true), PATH_CHARS));
        }
    }

    /// A `tool_result` block: a created task's id, or a failure.
    pub(super) fn result(&mut self, block: &Block) {
        let id = block.tool_use_id.as_deref().unwrap_or_default();
        let (tool, task) = match self.calls.get_mut(id) {
            Some(call) => (call.tool.clone(), call.task.take()),
            None => ("tool".to_string(), None),
        };
        if let Some(key) = task {
            let text = block.content.and_then(result_text).unwrap_or_default();
            self.todos.created(key, &text);
        }
        if block.is_error != Some(true) {
            return;
        }
        let text = block.content.and_then(result_text).unwrap_or_default();
        let first = text
            .lines()
            .map(|l| sanitize(l, true))
            .find(|l| !l.is_empty())
            .unwrap_or_else(|| "(no message)".to_string());
        self.failures.push_back(Failure {
            tool,
            error: cut(&first, FAILURE_CHARS),
        });
        if self.failures.len() > MAX_FAILURES {
            self.failures.pop_front();
        }
    }

    /// A checkpoint with the fields this log fills: todos, files, tools and failures.
    pub(super) fn finish(self) -> Checkpoint {
        let tools_used = self
            .counts
            .most_used(MAX_TOOLS)
            .into_iter()
            .map(|(name, count)| ToolCount { name, count })
            .collect();
        Checkpoint {
            todos: self.todos.finish(),
            files_modified: self.modified.newest_first(),
            files_read: self.read.newest_first(),
            tools_used,
            failures: self.failures.into(),
            ..Checkpoint::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::bounded::{ID_BYTES, MAX_CALLS, MAX_TOOL_NAMES};
    use serde_json::{json, Value};

    fn with_block(v: Value, f: impl FnOnce(&Block)) {
        let text = v.to_string();
        f(&serde_json::from_str::<Block>(&text).unwrap());
    }

    fn call(log: &mut ToolLog, id: &str, name: &str, input: Value) {
        let block = json!({"type": "tool_use", "id": id, "name": name, "input": input});
        with_block(block, |b| log.call(b));
    }

    fn result(log: &mut ToolLog, id: &str, content: Value, is_error: bool) {
        let block = json!({"type": "tool_result", "tool_use_id": id, "content": content, "is_error": is_error});
        with_block(block, |b| log.result(b));
    }

    fn failed_tools(cp: &Checkpoint) -> Vec<&str> {
        cp.failures.iter().map(|f| f.tool.as_str()).collect()
    }

    #[test]
    fn only_the_last_five_failures() {
        let mut log = ToolLog::default();
        for i in 0..8 {
            call(&mut log, &format!("b{i}"), "Bash", json!({}));
            result(&mut log, &format!("b{i}"), json!(format!("fail {i}")), true);
        }
        let cp = log.finish();
        assert_eq!(cp.failures.len(), MAX_FAILURES);
        assert_eq!(cp.failures[0].error, "fail 3");
        assert_eq!(cp.failures[4].error, "fail 7");
    }

    #[test]
    fn tasks_are_tracked_through_create_and_update() {
        let mut log = ToolLog::default();
        call(
            &mut log,
            "c1",
            "TaskCreate",
            json!({"subject": "Parse input"}),
        );
        result(
            &mut log,
            "c1",
            json!("Task #1 created successfully: Parse input"),
            false,
        );
        call(
            &mut log,
            "c2",
            "TaskCreate",
            json!({"subject": "Write tests"}),
        );
        let created =
            json!([{"type": "text", "text": "Task #2 created successfully: Write tests"}]);
        result(&mut log, "c2", created, false);
        call(
            &mut log,
            "u1",
            "TaskUpdate",
            json!({"taskId": "1", "status": "completed"}),
        );
        call(
            &mut log,
            "u2",
            "TaskUpdate",
            json!({"taskId": "2", "status": "in_progress"}),
        );
        let old = json!({"taskId": "7", "status": "pending", "subject": "Old task"});
        call(&mut log, "u3", "TaskUpdate", old);
        call(
            &mut log,
            "u4",
            "TaskUpdate",
            json!({"taskId": 9, "status": "in_progress"}),
        );
        let cp = log.finish();
        let list: Vec<_> = cp
            .todos
            .iter()
            .map(|t| (t.content.as_str(), t.status.as_str()))
            .collect();
        assert_eq!(
            list,
            [
                ("Write tests", "in_progress"),
                ("task #9", "in_progress"),
                ("Old task", "pending"),
                ("Parse input", "completed"),
            ]
        );
    }

    #[test]
    fn overlong_ids_are_not_paired() {
        let mut log = ToolLog::default();
        let long = "i".repeat(ID_BYTES + 1);
        call(&mut log, &long, "Bash", json!({}));
        result(&mut log, &long, json!("boom"), true);
        assert_eq!(log.calls.len(), 0);
        assert_eq!(failed_tools(&log.finish()), ["tool"]);
    }

    #[test]
    fn results_pair_with_the_newest_calls_only() {
        let mut log = ToolLog::default();
        for i in 0..MAX_CALLS * 4 {
            call(
                &mut log,
                &format!("id{i}"),
                &format!("T{}", i % 7),
                json!({}),
            );
        }
        assert_eq!(log.calls.len(), MAX_CALLS);
        let newest = MAX_CALLS * 4 - 1;
        result(&mut log, &format!("id{newest}"), json!("late"), true);
        result(&mut log, "id0", json!("too late"), true);
        assert_eq!(
            failed_tools(&log.finish()),
            [format!("T{}", newest % 7).as_str(), "tool"]
        );
    }

    #[test]
    fn tools_used_are_the_most_used_few_with_short_names() {
        let mut log = ToolLog::default();
        for i in 0..MAX_TOOL_NAMES * 2 {
            call(
                &mut log,
                "x",
                &format!("{i:04}{}", "n".repeat(200)),
                json!({}),
            );
            call(&mut log, "x", "Bash", json!({}));
        }
        assert_eq!(log.counts.len(), MAX_TOOL_NAMES);
        let cp = log.finish();
        assert_eq!(cp.tools_used.len(), MAX_TOOLS);
        assert_eq!(cp.tools_used[0].name, "Bash");
        assert_eq!(cp.tools_used[0].count, MAX_TOOL_NAMES as u64 * 2);
        assert!(cp.tools_used[1..]
            .iter()
            .all(|t| t.count == 1 && t.name.chars().count() == NAME_CHARS));
    }

    #[test]
    fn files_are_the_newest_distinct_few() {
        let mut log = ToolLog::default();
        for i in 0..MAX_FILES * 3 {
            call(
                &mut log,
                "e",
                "Edit",
                json!({"file_path": format!("/p/{i}.rs")}),
            );
            call(&mut log, "r", "Read", json!({"file_path": "/p/same.rs"}));
        }
        let long = format!("/p/{}", "d/".repeat(PATH_CHARS));
        call(&mut log, "w", "Write", json!({"file_path": long}));
        call(&mut log, "e", "Edit", json!({"file_path": "/p/0.rs"}));
        let cp = log.finish();
        assert_eq!(cp.files_modified.len(), MAX_FILES);
        assert_eq!(cp.files_modified[0], "/p/0.rs");
        assert_eq!(cp.files_modified[1].chars().count(), PATH_CHARS);
        assert_eq!(cp.files_modified[2], format!("/p/{}.rs", MAX_FILES * 3 - 1));
        assert_eq!(cp.files_read, ["/p/same.rs"]);
    }
}
