//! A child process together with everything it starts, killed as one: a process group on Unix,
//! a job object on Windows. `statusline --then` runs the user's status line this way, and
//! `doctor` the `claude --version` it asks, so that a command that hangs or leaves something in
//! the background never outlives its deadline.

#[cfg(unix)]
pub use unix::{spawn_group, Group};
#[cfg(windows)]
pub use windows::{spawn_group, Group};

#[cfg(unix)]
mod unix {
    use std::io;
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command};

    /// The process group the child leads.
    pub struct Group;

    pub fn spawn_group(mut command: Command) -> io::Result<(Child, Group)> {
        Ok((command.process_group(0).spawn()?, Group))
    }

    impl Group {
        #[allow(clippy::unused_self)] // the same call as the Windows job object's
        pub fn kill(&self, child: &mut Child) {
            if let Ok(group) = libc::pid_t::try_from(child.id()) {
                // SAFETY: a plain system call on a group this process created.
                unsafe { libc::killpg(group, libc::SIGKILL) };
            }
        }
    }
}

#[cfg(windows)]
#[allow(clippy::borrow_as_ptr, clippy::ref_as_ptr)] // Win32 calls take pointers to what they fill in
mod windows {
    use std::io;
    use std::os::windows::io::AsRawHandle;
    use std::process::{Child, Command};

    use windows_sys::Win32::Foundation::{CloseHandle, HANDLE};
    use windows_sys::Win32::System::JobObjects::{
        AssignProcessToJobObject, CreateJobObjectW, JobObjectExtendedLimitInformation,
        SetInformationJobObject, TerminateJobObject, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
        JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    };

    /// A job object holding the child and everything it starts, killed whole (also when this
    /// process exits: kill-on-close). `None` where no job could be made (then only the
    /// child is killed).
    pub struct Group(Option<HANDLE>);

    pub fn spawn_group(mut command: Command) -> io::Result<(Child, Group)> {
        let child = command.spawn()?;
        let job = job_for(&child);
        Ok((child, Group(job)))
    }

    fn job_for(child: &Child) -> Option<HANDLE> {
        // SAFETY: no attributes, no name.
        let job = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if job.is_null() {
            return None;
        }
        // SAFETY: an all-zero limit structure is valid; only the flag below is set.
        let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        // SAFETY: a job handle just made, a valid structure of the size given, and the child's
        // process handle, alive as long as `child`.
        let ok = unsafe {
            SetInformationJobObject(
                job,
                JobObjectExtendedLimitInformation,
                (&limits as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
                std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            ) != 0
                && AssignProcessToJobObject(job, child.as_raw_handle() as HANDLE) != 0
        };
        if !ok {
            // SAFETY: the handle made above, closed once.
            unsafe { CloseHandle(job) };
            return None;
        }
        Some(job)
    }

    impl Group {
        pub fn kill(&self, child: &mut Child) {
            match self.0 {
                // SAFETY: the job handle this group owns.
                Some(job) => unsafe {
                    TerminateJobObject(job, 1);
                },
                None => {
                    let _ = child.kill();
                }
            }
        }
    }

    impl Drop for Group {
        fn drop(&mut self) {
            if let Some(job) = self.0 {
                // SAFETY: the job handle this group owns, closed once.
                unsafe { CloseHandle(job) };
            }
        }
    }
}
