//! The page-migration system calls, `move_pages(2)` and `migrate_pages(2)`, which glibc does
//! not wrap (libnuma does; we do not link it).

use std::io;

use placed_core::cpuset::NodeSet;

/// `MPOL_MF_MOVE`: move pages mapped only by this process.
pub const MPOL_MF_MOVE: i32 = 1 << 1;
/// `MPOL_MF_MOVE_ALL`: move shared pages too (needs CAP_SYS_NICE).
pub const MPOL_MF_MOVE_ALL: i32 = 1 << 2;

/// `move_pages(2)` on process `pid`: with `nodes`, moves `pages[i]` to `nodes[i]`; without,
/// only reports where each page is. Either way `status[i]` gets the page's node or a
/// negative errno (`-ENOENT`: not present, `-EFAULT`: not mapped, `-EBUSY`, `-EACCES`, ...).
/// Returns how many pages could not be moved (non-zero only with `nodes`).
pub fn move_pages(
    pid: u32,
    pages: &[usize],
    nodes: Option<&[i32]>,
    status: &mut [i32],
    flags: i32,
) -> io::Result<usize> {
    if status.len() != pages.len() || nodes.is_some_and(|n| n.len() != pages.len()) {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
    let nodes_ptr = nodes.map_or(std::ptr::null(), <[i32]>::as_ptr);
    // SAFETY: `pages`, `nodes` (when given) and `status` all hold `pages.len()` elements,
    // checked above; the kernel reads `count` pointers and nodes and writes `count` status
    // words, and never dereferences the page addresses in our address space (they belong
    // to `pid`). Pointer-sized `usize` addresses have the layout of `const void *`.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            pid,
            pages.len() as libc::c_ulong,
            pages.as_ptr(),
            nodes_ptr,
            status.as_mut_ptr(),
            flags,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(usize::try_from(rc).unwrap_or(0))
    }
}

/// `migrate_pages(2)`: moves every page of `pid` on a node of `from` to the node of `to`
/// with the same position (modulo `to`'s size), as a cpuset `mems` change does. Returns
/// how many pages could not be moved.
pub fn migrate_pages(pid: u32, from: &NodeSet, to: &NodeSet) -> io::Result<usize> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
    let words = mask_words(from).max(mask_words(to));
    let (old, new) = (mask(from, words), mask(to, words));
    // The kernel decrements maxnode before use (get_nodes), so pass one more than the bits.
    let maxnode = (words * 64 + 1) as libc::c_ulong;
    // SAFETY: `old` and `new` each hold `words` c_ulongs, i.e. `maxnode - 1` bits, which is
    // exactly what the kernel reads from each; it writes nothing back.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_migrate_pages,
            pid,
            maxnode,
            old.as_ptr(),
            new.as_ptr(),
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(usize::try_from(rc).unwrap_or(0))
    }
}

fn mask_words(nodes: &NodeSet) -> usize {
    nodes.last().map_or(1, |n| n as usize / 64 + 1)
}

fn mask(nodes: &NodeSet, words: usize) -> Vec<libc::c_ulong> {
    let mut m = vec![0 as libc::c_ulong; words];
    for n in nodes.iter() {
        m[n as usize / 64] |= 1 << (n % 64);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks() {
        let s: NodeSet = "0,3,64".parse().unwrap();
        assert_eq!(mask(&s, mask_words(&s)), vec![0b1001, 1]);
    }

    #[test]
    fn query_own_pages() {
        // Our own stack page is present and on some node; an unmapped address is -EFAULT
        // (or -ENOENT on some kernels).
        let x = [1u8; 64];
        let pages = [std::ptr::addr_of!(x) as usize & !4095, 4096];
        let mut status = [i32::MIN; 2];
        move_pages(std::process::id(), &pages, None, &mut status, 0).unwrap();
        assert!(status[0] >= 0, "{status:?}");
        assert!(
            status[1] == -libc::EFAULT || status[1] == -libc::ENOENT,
            "{status:?}"
        );
        let err = move_pages(std::process::id(), &pages, None, &mut [0; 1], 0).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EINVAL));
    }
}
