//! `fsin-link`: a link between a node host and the `fsin serve` host that
//! adds a fixed one-way delay in each direction, for measuring what
//! inter-host latency costs a co-simulation where the kernel has no
//! `tc netem` (docs/cosim.md, "Several hosts"). It relays the gRPC stream
//! (TCP, every connection to `--listen`) and the datagram fast path (UDP,
//! `--listen`'s address at the server's `--datagram-port`) to the server.
//! A client then uses the relay's address as the server URL.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Parser;

/// Relay the fsin protocol between two hosts with an added delay.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// Address clients connect to instead of the server (e.g.
    /// 127.0.0.1:50051); datagrams are taken on its IP at the server's
    /// datagram port.
    #[arg(long)]
    listen: SocketAddr,
    /// The server's --listen address.
    #[arg(long)]
    to: SocketAddr,
    /// The server's --datagram-port (0: relay the stream only, clients
    /// then keep every round on it).
    #[arg(long, default_value_t = 0)]
    datagram_port: u16,
    /// One-way delay added in each direction, microseconds.
    #[arg(long, default_value_t = 0)]
    delay_us: u64,
}

fn main() -> Result<()> {
    let a = Args::parse();
    let delay = Duration::from_micros(a.delay_us);
    if a.datagram_port != 0 {
        let local = SocketAddr::new(a.listen.ip(), a.datagram_port);
        let server = SocketAddr::new(a.to.ip(), a.datagram_port);
        let sock = UdpSocket::bind(local).with_context(|| format!("binding UDP {local}"))?;
        thread::spawn(move || relay_datagrams(sock, server, delay));
    }
    let listener = TcpListener::bind(a.listen).with_context(|| format!("binding {}", a.listen))?;
    for client in listener.incoming() {
        let client = client.context("accepting a connection")?;
        let server = TcpStream::connect(a.to).with_context(|| format!("connecting to {}", a.to))?;
        for s in [&client, &server] {
            s.set_nodelay(true)?;
        }
        pipe(client.try_clone()?, server.try_clone()?, delay);
        pipe(server, client, delay);
    }
    Ok(())
}

/// A writer thread that sends each item of `rx` once its time has come.
fn delayed<T: Send + 'static>(
    mut send: impl FnMut(T) -> bool + Send + 'static,
) -> mpsc::Sender<(Instant, T)> {
    let (tx, rx) = mpsc::channel::<(Instant, T)>();
    thread::spawn(move || {
        for (due, item) in rx {
            let now = Instant::now();
            if due > now {
                thread::sleep(due - now);
            }
            if !send(item) {
                return;
            }
        }
    });
    tx
}

/// Copies `from` to `to`, each chunk `delay` after it was read; closes the
/// write side when `from` ends.
fn pipe(mut from: TcpStream, mut to: TcpStream, delay: Duration) {
    let closing = to.try_clone().ok();
    let tx = delayed(move |chunk: Vec<u8>| to.write_all(&chunk).is_ok());
    thread::spawn(move || {
        let mut buf = vec![0; 64 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(n) if n > 0 => {
                    if tx
                        .send((Instant::now() + delay, buf[..n].to_vec()))
                        .is_err()
                    {
                        break;
                    }
                }
                _ => break,
            }
        }
        drop(tx);
        if let Some(s) = closing {
            let _ = s.shutdown(std::net::Shutdown::Write);
        }
    });
}

/// Relays datagrams from clients on `sock` to `server` (one upstream
/// socket per client, so that the server's answers find their way back),
/// each `delay` later in both directions.
fn relay_datagrams(sock: UdpSocket, server: SocketAddr, delay: Duration) {
    let Ok(back) = sock.try_clone() else { return };
    let to_client = delayed(move |(d, peer): (Vec<u8>, SocketAddr)| {
        let _ = back.send_to(&d, peer);
        true
    });
    let mut upstream: HashMap<SocketAddr, mpsc::Sender<(Instant, Vec<u8>)>> = HashMap::new();
    let mut buf = vec![0; 65536];
    while let Ok((n, peer)) = sock.recv_from(&mut buf) {
        let tx = match upstream.entry(peer) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                match open_upstream(server, peer, delay, to_client.clone()) {
                    Ok(tx) => e.insert(tx),
                    Err(err) => {
                        eprintln!("fsin-link: no upstream socket for {peer}: {err}");
                        continue;
                    }
                }
            }
        };
        let _ = tx.send((Instant::now() + delay, buf[..n].to_vec()));
    }
}

/// A socket to `server` for the datagrams of client `peer`: what it sends
/// goes to the server `delay` later, what comes back goes to `to_client`.
fn open_upstream(
    server: SocketAddr,
    peer: SocketAddr,
    delay: Duration,
    to_client: mpsc::Sender<(Instant, (Vec<u8>, SocketAddr))>,
) -> std::io::Result<mpsc::Sender<(Instant, Vec<u8>)>> {
    let any: IpAddr = if server.is_ipv4() {
        std::net::Ipv4Addr::UNSPECIFIED.into()
    } else {
        std::net::Ipv6Addr::UNSPECIFIED.into()
    };
    let up = UdpSocket::bind(SocketAddr::new(any, 0))?;
    up.connect(server)?;
    let reader = up.try_clone()?;
    thread::spawn(move || {
        let mut buf = vec![0; 65536];
        while let Ok(n) = reader.recv(&mut buf) {
            let item = (buf[..n].to_vec(), peer);
            if to_client.send((Instant::now() + delay, item)).is_err() {
                return;
            }
        }
    });
    Ok(delayed(move |d: Vec<u8>| {
        let _ = up.send(&d);
        true
    }))
}
