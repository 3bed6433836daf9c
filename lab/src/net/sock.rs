//! TCP socket helpers: choose a congestion control, read it back, TCP_INFO.

use std::io;
use std::os::fd::AsRawFd;

/// `setsockopt(TCP_CONGESTION)`.
pub fn set_congestion(sock: &impl AsRawFd, name: &str) -> io::Result<()> {
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    os_result(rc)
}

/// `getsockopt(TCP_CONGESTION)`: the socket's congestion control.
pub fn congestion(sock: &impl AsRawFd) -> io::Result<String> {
    let mut buf = [0u8; 16];
    let mut len = buf.len() as libc::socklen_t;
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    os_result(rc)?;
    let end = buf.iter().position(|&b| b == 0).unwrap_or(len as usize);
    Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// `getsockopt(TCP_INFO)`.
pub fn tcp_info(sock: &impl AsRawFd) -> io::Result<libc::tcp_info> {
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    os_result(rc)?;
    Ok(info)
}

/// A libc call's return code as a result: 0 is success, anything else
/// the call's errno.
fn os_result(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a fresh TCP socket of this process (no namespace, no BPF): a
    /// congestion control the kernel always has is set and read back, an
    /// unknown one is the kernel's ENOENT, TCP_INFO of a closed socket reads.
    #[test]
    fn congestion_round_trips_and_errors_carry_errno() {
        let sock = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        set_congestion(&sock, "reno").unwrap();
        assert_eq!(congestion(&sock).unwrap(), "reno");
        let e = set_congestion(&sock, "no-such-cca").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT), "{e}");
        assert_eq!(congestion(&sock).unwrap(), "reno");
        // TCP_LISTEN in include/net/tcp_states.h.
        assert_eq!(tcp_info(&sock).unwrap().tcpi_state, 10);
    }
}
