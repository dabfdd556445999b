//! The Unix sockets of the rendezvous: made, addressed, polled, and whose peer is who.

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::time::Instant;

use super::rendezvous::DIRECTORY_VARIABLE;
use super::ProcessGroupError;

/// A sequenced-packet Unix socket.
pub(super) fn socket() -> Result<OwnedFd, ProcessGroupError> {
    // SAFETY: no pointers.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(ProcessGroupError::io("open a Unix socket")(
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: a fresh descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

pub(super) fn socket_address(path: &Path) -> Result<libc::sockaddr_un, ProcessGroupError> {
    // SAFETY: plain data, all-zero is empty.
    let mut address: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    address.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str());
    if bytes.len() >= address.sun_path.len() {
        return Err(ProcessGroupError::Environment {
            variable: DIRECTORY_VARIABLE,
            problem: format!(
                "the socket path {} is longer than a Unix socket's {} bytes; name a shorter directory",
                path.display(),
                address.sun_path.len() - 1
            ),
        });
    }
    for (to, &from) in address.sun_path.iter_mut().zip(bytes) {
        *to = from as libc::c_char;
    }
    Ok(address)
}

/// The user id of the process at the other end of `link` (`SO_PEERCRED`).
pub(super) fn peer_uid(link: &OwnedFd) -> Option<u32> {
    // SAFETY: plain data.
    let mut credentials: libc::ucred = unsafe { std::mem::zeroed() };
    let mut length = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `credentials` and `length` are valid out-pointers of the option's size.
    let done = unsafe {
        libc::getsockopt(
            link.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            std::ptr::addr_of_mut!(credentials).cast(),
            &mut length,
        )
    };
    (done == 0).then_some(credentials.uid)
}

/// Waits until `fd` is readable (or closed) or `deadline` passes; false on the deadline.
pub(super) fn wait_readable(
    fd: BorrowedFd<'_>,
    deadline: Instant,
) -> Result<bool, ProcessGroupError> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut poll = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let millis = i32::try_from(left.as_millis().max(1)).unwrap_or(i32::MAX);
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut poll, 1, millis) };
        if ready > 0 {
            return Ok(true);
        }
        if ready < 0 {
            let error = std::io::Error::last_os_error();
            if error.kind() != std::io::ErrorKind::Interrupted {
                return Err(ProcessGroupError::io("poll a group socket")(error));
            }
        } else if Instant::now() >= deadline {
            return Ok(false);
        }
    }
}

/// Removes the socket file once rank 0 stops listening: nothing of the job is left on
/// disk.
pub(super) struct RemoveOnDrop<'a>(pub(super) &'a Path);

impl Drop for RemoveOnDrop<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.0);
    }
}
