//! The network benchmark: UDP ping-pong between two guests and a TCP
//! all-to-all exchange, timed in guest time.
//!
//! `ME` is this guest's IPv4 address, `PEER`/`PEERS` the other guests'
//! (comma-separated). Ping-pong: the guest with the lower address sends
//! `BYTES` bytes over UDP port 7001 and the other echoes them, `ROUNDS`
//! times; a datagram without an answer within 20 ms of guest time is sent
//! again. All-to-all: every guest listens on TCP port 7002, connects to
//! every peer (retrying until it listens), sends it `BYTES` bytes, and reads
//! `BYTES` bytes from every peer. Each returns one console line,
//! `FSIN-BENCH KIND key=value...`, with the elapsed guest time in
//! microseconds (`elapsed_us`).

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::thread;
use std::time::{Duration, Instant};

const PINGPONG_PORT: u16 = 7001;
const A2A_PORT: u16 = 7002;

fn addr(ip: &str, port: u16) -> Result<SocketAddr, String> {
    let ip: Ipv4Addr = ip.parse().map_err(|e| format!("bad address {ip:?}: {e}"))?;
    Ok(SocketAddr::from((ip, port)))
}

pub fn number(s: &str, what: &str) -> Result<usize, String> {
    s.parse().map_err(|e| format!("bad {what} {s:?}: {e}"))
}

/// UDP ping-pong; returns the line to print.
pub fn pingpong(me: &str, peer: &str, rounds: usize, bytes: usize) -> Result<String, String> {
    let sock = UdpSocket::bind(addr(me, PINGPONG_PORT)?).map_err(|e| format!("bind: {e}"))?;
    let peer_addr = addr(peer, PINGPONG_PORT)?;
    let me_ip: Ipv4Addr = me.parse().map_err(|e| format!("bad address: {e}"))?;
    let peer_ip: Ipv4Addr = peer.parse().map_err(|e| format!("bad address: {e}"))?;
    let mut buf = vec![0u8; bytes.max(8)];
    let start = Instant::now();
    let mut resent = 0;
    if me_ip < peer_ip {
        sock.set_read_timeout(Some(Duration::from_millis(20)))
            .map_err(|e| e.to_string())?;
        for round in 0..rounds {
            buf[..8].copy_from_slice(&(round as u64).to_le_bytes());
            loop {
                sock.send_to(&buf, peer_addr)
                    .map_err(|e| format!("send: {e}"))?;
                match sock.recv_from(&mut buf) {
                    Ok((n, _)) if n >= 8 && buf[..8] == (round as u64).to_le_bytes() => break,
                    Ok(_) => {}
                    Err(_) => resent += 1,
                }
            }
        }
    } else {
        sock.set_read_timeout(Some(Duration::from_secs(30)))
            .map_err(|e| e.to_string())?;
        let mut answered = 0;
        while answered < rounds {
            let (n, from) = sock.recv_from(&mut buf).map_err(|e| format!("recv: {e}"))?;
            sock.send_to(&buf[..n], from)
                .map_err(|e| format!("send: {e}"))?;
            if n >= 8
                && u64::from_le_bytes(buf[..8].try_into().expect("8 bytes")) == answered as u64
            {
                answered += 1;
            }
        }
        // The last answer may be lost: keep echoing repeats for a while.
        sock.set_read_timeout(Some(Duration::from_millis(100)))
            .map_err(|e| e.to_string())?;
        while let Ok((n, from)) = sock.recv_from(&mut buf) {
            let _ = sock.send_to(&buf[..n], from);
        }
    }
    let us = start.elapsed().as_micros();
    Ok(format!(
        "FSIN-BENCH pingpong peer={peer} rounds={rounds} bytes={bytes} resent={resent} elapsed_us={us}"
    ))
}

/// TCP all-to-all; returns the line to print.
pub fn a2a(me: &str, peers: &[String], bytes: usize) -> Result<String, String> {
    let listener = TcpListener::bind(addr(me, A2A_PORT)?).map_err(|e| format!("listen: {e}"))?;
    let expected = peers.len();
    let start = Instant::now();
    let receiver = thread::spawn(move || -> Result<(), String> {
        let mut buf = vec![0u8; bytes];
        for _ in 0..expected {
            let (mut s, _) = listener.accept().map_err(|e| format!("accept: {e}"))?;
            s.read_exact(&mut buf).map_err(|e| format!("read: {e}"))?;
        }
        Ok(())
    });
    let data = vec![0x5au8; bytes];
    for p in peers {
        let to = addr(p, A2A_PORT)?;
        let mut tries = 0;
        let mut s = loop {
            match TcpStream::connect(to) {
                Ok(s) => break s,
                Err(e) if tries < 2000 => {
                    tries += 1;
                    let _ = e;
                    thread::sleep(Duration::from_millis(1));
                }
                Err(e) => return Err(format!("connect {p}: {e}")),
            }
        };
        s.write_all(&data)
            .map_err(|e| format!("write to {p}: {e}"))?;
    }
    receiver
        .join()
        .map_err(|_| "receiver panicked".to_string())??;
    let us = start.elapsed().as_micros();
    Ok(format!(
        "FSIN-BENCH a2a peers={expected} bytes={bytes} elapsed_us={us}"
    ))
}
