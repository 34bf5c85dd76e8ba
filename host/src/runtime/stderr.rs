//! A plugin's stderr: each line goes to the worker's log (within the bounds of `PluginLog`), and
//! the last bytes are kept to explain a failure (a Rust panic message lands here just before the
//! trap).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use super::plugin_log::{LogLevel, PluginLog};
use crate::sync::Unpoisoned;
use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// Bytes of stderr kept for failure reports.
pub(super) const STDERR_TAIL_BYTES: usize = 16 * 1024;
#[derive(Clone)]
pub(super) struct StderrTail {
    log: PluginLog,
    inner: Arc<Mutex<Inner>>,
}

#[derive(Default)]
struct Inner {
    tail: VecDeque<u8>,
    /// The line being written, up to the log's longest line.
    line: Vec<u8>,
    /// Bytes of the line past that.
    cut: usize,
}

impl StderrTail {
    pub(super) fn new(log: PluginLog) -> Self {
        StderrTail { log, inner: Arc::default() }
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
                let cut = std::mem::take(&mut inner.cut);
                self.log.line(LogLevel::Info, "stderr: ", &line, cut);
            } else if inner.line.len() < self.log.max_line_bytes() {
                inner.line.push(byte);
            } else {
                inner.cut += 1;
            }
        }
    }

    /// What the plugin wrote last, trimmed.
    pub(super) fn text(&self) -> String {
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
