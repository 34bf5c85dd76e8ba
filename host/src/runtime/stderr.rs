//! A plugin's stderr: each line goes to the worker's log, and the last bytes are kept to explain
//! a failure (a Rust panic message lands here just before the trap).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use crate::sync::Unpoisoned;
use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// Bytes of stderr kept for failure reports.
pub const STDERR_TAIL_BYTES: usize = 16 * 1024;
/// Longest stderr line logged whole; longer lines are cut.
const MAX_LOGGED_LINE: usize = 4096;

#[derive(Clone)]
pub struct StderrTail {
    label: Arc<str>,
    inner: Arc<Mutex<Inner>>,
}

#[derive(Default)]
struct Inner {
    tail: VecDeque<u8>,
    line: Vec<u8>,
}

impl StderrTail {
    pub fn new(label: &str) -> Self {
        StderrTail { label: label.into(), inner: Arc::default() }
    }

    fn append(&self, bytes: &[u8]) {
        let mut inner = self.inner.locked();
        for &byte in bytes {
            if inner.tail.len() == STDERR_TAIL_BYTES {
                inner.tail.pop_front();
            }
            inner.tail.push_back(byte);
            if byte == b'\n' {
                let line = std::mem::take(&mut inner.line);
                tracing::info!(target: "plugin", task = &*self.label, "stderr: {}", String::from_utf8_lossy(&line));
            } else if inner.line.len() < MAX_LOGGED_LINE {
                inner.line.push(byte);
            }
        }
    }

    /// What the plugin wrote last, trimmed.
    pub fn text(&self) -> String {
        let inner = self.inner.locked();
        let bytes: Vec<u8> = inner.tail.iter().copied().collect();
        String::from_utf8_lossy(&bytes).trim().to_string()
    }
}

impl IsTerminal for StderrTail {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for StderrTail {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }

    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for StderrTail {
    async fn ready(&mut self) {}
}

impl OutputStream for StderrTail {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.append(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(64 * 1024)
    }
}

impl tokio::io::AsyncWrite for StderrTail {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.append(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
