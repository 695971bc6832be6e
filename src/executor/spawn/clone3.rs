//! `clone3` for `executor::spawn`: the same vfork-style child as glibc's `clone`, but created
//! directly in the unit's cgroup (`CLONE_INTO_CGROUP`), so no migration is needed — moving a
//! process between cgroups takes a lock that now and then waits for an RCU grace period.
//!
//! glibc 2.36 has no `clone3` wrapper, and a raw `clone3` that shares memory returns in the
//! child on the new stack, where no Rust frame exists: a few instructions of assembly call the
//! child function at once instead. Written for x86_64 only; elsewhere, or where the kernel or a
//! seccomp filter refuses `clone3`, callers use glibc's `clone` (reported as [`UNAVAILABLE`]).

use std::sync::atomic::{AtomicBool, Ordering};

use super::ChildArgs;

/// `spawn` could not use `clone3`: the caller falls back to glibc's `clone`.
pub(super) const UNAVAILABLE: libc::c_int = libc::c_int::MIN;

/// Cleared once the kernel has said `clone3` or `CLONE_INTO_CGROUP` is not there.
static USABLE: AtomicBool = AtomicBool::new(true);

/// Use glibc's `clone` from now on (or `clone3` again), for tests of both paths.
#[cfg(test)]
pub(super) fn set_usable(usable: bool) {
    USABLE.store(usable, Ordering::Relaxed);
}

/// `CLONE_INTO_CGROUP` (Linux 5.7).
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// The kernel's `struct clone_args` (version 2, with `cgroup`).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// Start `child_main(args)` on `stack..stack + size`, in `args.cgroup` when there is one; the
/// pid, or [`UNAVAILABLE`] when the caller must use glibc's `clone` instead.
///
/// # Safety
/// As for glibc's `clone` with `CLONE_VM | CLONE_VFORK`: the stack is valid, writable and used
/// by nothing else, and `args` stays alive until this returns (the parent sleeps until then).
pub(super) unsafe fn spawn(
    args: &ChildArgs,
    stack: *mut u8,
    size: usize,
    pidfd: &mut libc::c_int,
) -> libc::c_int {
    if !USABLE.load(Ordering::Relaxed) {
        return UNAVAILABLE;
    }
    let mut clone = CloneArgs {
        flags: (libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD) as u64,
        pidfd: pidfd as *mut libc::c_int as u64,
        exit_signal: libc::SIGCHLD as u64,
        stack: stack as u64,
        stack_size: size as u64,
        ..CloneArgs::default()
    };
    if args.cgroup >= 0 {
        clone.flags |= CLONE_INTO_CGROUP;
        clone.cgroup = args.cgroup as u64;
    }
    // SAFETY: forwarded from the caller.
    let rc = unsafe { raw(&clone, args) };
    if rc >= 0 {
        return rc as libc::c_int;
    }
    // Not there (old kernel, seccomp) or too old for CLONE_INTO_CGROUP: stop trying. Any other
    // refusal gets one try through glibc's `clone`, which reports the error if it persists.
    if matches!(-rc as libc::c_int, libc::ENOSYS | libc::E2BIG | libc::EPERM) {
        USABLE.store(false, Ordering::Relaxed);
    }
    UNAVAILABLE
}

/// The raw system call: in the child (return value 0, on the new stack) call `child_main`,
/// which never returns. The kernel's result (pid or -errno) in the parent.
#[cfg(target_arch = "x86_64")]
unsafe fn raw(clone: &CloneArgs, args: &ChildArgs) -> i64 {
    let child: extern "C" fn(*mut libc::c_void) -> libc::c_int = super::child_main;
    let ret: i64;
    // SAFETY: the child runs only the call below on its own 16-byte aligned stack (the kernel
    // set its stack pointer to the top of `clone.stack`); r12 and r13 survive the system call.
    unsafe {
        std::arch::asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            "mov rdi, r12",
            "call r13",
            "ud2",
            "2:",
            inlateout("rax") libc::SYS_clone3 => ret,
            in("rdi") clone as *const CloneArgs,
            in("rsi") std::mem::size_of::<CloneArgs>(),
            in("r12") args as *const ChildArgs,
            in("r13") child,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn raw(_clone: &CloneArgs, _args: &ChildArgs) -> i64 {
    -(libc::ENOSYS as i64)
}
