//! Decoding ahead: worker threads walk one fetch answer's batches (the CRC check, the
//! decompression, the parsing: `batch::one`) while the application's thread builds the records
//! of the batches before, as librdkafka decompresses on threads of its own.  With `workers`
//! threads, worker `w` takes the answer's batches `w`, `w + workers`, ... (stepping over the
//! others by their length alone), and the application takes the results in batch order.  The
//! workers touch no Python object and never take the interpreter lock; each holds at most
//! `AHEAD` results the application has not taken (the memory bound: a few decompressed batches
//! per worker, for the answer being drained).
//!
//! The workers read the answer's `bytes` in place: `Ahead` holds a reference to it and joins
//! them before letting it go, and a `bytes` object never changes.

use std::sync::mpsc::{sync_channel, Receiver, TryRecvError};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread::JoinHandle;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple, PyType};

use crate::batch::{self, Step};
use crate::{built, Maker, END, PYTHON};

/// Results a worker may hold ready before the application takes them.
const AHEAD: usize = 4;

/// What a worker found at one of its batches: the batch parsed, a batch without records to hand
/// out, or where the walk ends or turns to the Python path (the batch's position).
enum Found {
    Batch(batch::Parsed),
    Skip,
    End(usize),
    Python(usize),
}

/// The address of the answer's bytes, for the workers.
#[derive(Clone, Copy)]
struct Answer {
    at: usize,
    len: usize,
}

impl Answer {
    /// SAFETY: the caller keeps the `bytes` object alive (and it is immutable) for as long as
    /// the slice is used (`Ahead` joins the workers before dropping its reference).
    unsafe fn bytes(&self) -> &[u8] {
        std::slice::from_raw_parts(self.at as *const u8, self.len)
    }
}

/// The application's side: the workers' results, and where it stands.
struct Taken {
    found: Vec<Receiver<Found>>,
    /// the index of the next batch (its worker: index % workers)
    index: usize,
    /// the position after the last batch taken
    pos: usize,
}

/// decode_ahead(buf, pos, fetch_offset, check_crcs, workers) -> Ahead: starts `workers` threads
/// walking `buf`'s batches from byte `pos` on; `Ahead.decode(...)` then answers as `decode_batch`
/// would, batch after batch.
#[pyclass(module = "groupclient.consumer._native")]
pub struct Ahead {
    buf: Py<PyBytes>,
    taken: Mutex<Taken>,
    workers: Mutex<Vec<JoinHandle<()>>>,
    /// the process that started the workers: a child forked from it has none of them (a fork
    /// copies only the forking thread), so there the Python path decodes the rest
    pid: u32,
    /// `taken.pos`, also readable without the lock: a child forked while another thread held
    /// `taken` (waiting for a worker) would wait for ever on it, and on the channels' own locks a
    /// worker may have held at the fork; so a child touches neither, and reads where to go on here
    pos: AtomicUsize,
}

#[pyfunction]
pub fn decode_ahead(buf: &Bound<'_, PyBytes>, pos: usize, fetch_offset: i64, check_crcs: bool,
                    workers: usize) -> PyResult<Ahead> {
    let data = buf.as_bytes();
    let answer = Answer { at: data.as_ptr() as usize, len: data.len() };
    let count = workers.max(1);
    let mut found = Vec::with_capacity(count);
    let mut handles = Vec::with_capacity(count);
    for me in 0..count {
        let (send, receive) = sync_channel(AHEAD);
        found.push(receive);
        let spawned = std::thread::Builder::new().name("groupclient-decode".into()).spawn(move || {
            // SAFETY: see Answer::bytes
            let data = unsafe { answer.bytes() };
            let mut pos = pos;
            for index in 0.. {
                if index % count != me {
                    match batch::batch_end(data, pos) {
                        Some(next) => pos = next,
                        None => return, // its worker reports the end there
                    }
                    continue;
                }
                let (found, next) = match batch::one(data, pos, fetch_offset, check_crcs) {
                    Step::Batch(parsed) => {
                        let next = parsed.next;
                        (Found::Batch(parsed), Some(next))
                    }
                    Step::Skip(next) => (Found::Skip, Some(next)),
                    Step::End => (Found::End(pos), None),
                    Step::Python => (Found::Python(pos), None),
                };
                if send.send(found).is_err() {
                    return; // the application let the answer go
                }
                match next {
                    Some(next) => pos = next,
                    None => return,
                }
            }
        });
        match spawned {
            Ok(handle) => handles.push(handle),
            Err(e) => {
                drop(found); // the workers started end at their first send
                for handle in handles {
                    let _ = handle.join();
                }
                return Err(PyRuntimeError::new_err(format!("cannot start a decoding thread: {e}")));
            }
        }
    }
    Ok(Ahead {
        buf: buf.clone().unbind(),
        taken: Mutex::new(Taken { found, index: 0, pos }),
        workers: Mutex::new(handles),
        pid: std::process::id(),
        pos: AtomicUsize::new(pos),
    })
}

#[pymethods]
impl Ahead {
    /// decode(topic, partition, key_deserializer, value_deserializer, aiokafka, record_type)
    /// -> (outcome, position, payload), as `decode_batch` answers for the next batch.
    #[pyo3(signature = (topic, partition, key_deserializer, value_deserializer, aiokafka, record_type))]
    fn decode<'py>(
        &self,
        py: Python<'py>,
        topic: &Bound<'py, PyString>,
        partition: &Bound<'py, PyAny>,
        key_deserializer: Option<&Bound<'py, PyAny>>,
        value_deserializer: Option<&Bound<'py, PyAny>>,
        aiokafka: bool,
        record_type: &Bound<'py, PyType>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        if std::process::id() != self.pid {
            // a forked child: no workers here, and no lock of the parent's to take (see `pos`)
            return (PYTHON, self.pos.load(Ordering::Acquire), py.None()).into_pyobject(py);
        }
        let mut taken = self.taken.lock().expect("not poisoned");
        let parsed = loop {
            let which = taken.index % taken.found.len();
            let found = match taken.found[which].try_recv() {
                Ok(found) => Some(found),
                // not ready: wait for the worker (CPU work on one batch) without the lock (the
                // receiver goes to the waiting closure and back: it is Send, not Sync)
                Err(TryRecvError::Empty) => {
                    let (_, idle) = sync_channel(0);
                    let receive = std::mem::replace(&mut taken.found[which], idle);
                    let (receive, found) = py.detach(move || {
                        let found = receive.recv().ok();
                        (receive, found)
                    });
                    taken.found[which] = receive;
                    found
                }
                Err(TryRecvError::Disconnected) => None,
            };
            taken.index += 1;
            match found {
                Some(Found::Batch(parsed)) => break parsed,
                Some(Found::Skip) => continue,
                Some(Found::End(at)) => return (END, at, py.None()).into_pyobject(py),
                Some(Found::Python(at)) => return (PYTHON, at, py.None()).into_pyobject(py),
                // a worker is gone (it cannot be, short of a panic): the Python path goes on
                None => return (PYTHON, taken.pos, py.None()).into_pyobject(py),
            }
        };
        let data = self.buf.bind(py).as_bytes();
        let maker = Maker { py, data, topic, partition, key_deserializer, value_deserializer, aiokafka, record_type };
        let answer = built(py, &maker, &parsed, taken.pos)?;
        taken.pos = parsed.next;
        self.pos.store(parsed.next, Ordering::Release);
        Ok(answer)
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        let found = std::mem::take(&mut self.taken.get_mut().unwrap_or_else(|e| e.into_inner()).found);
        let workers = std::mem::take(self.workers.get_mut().unwrap_or_else(|e| e.into_inner()));
        if std::process::id() != self.pid {
            // a forked child: its threads are the parent's, not to join, and dropping a receiver
            // would take the channel's lock, which a worker may have held at the fork
            std::mem::forget(found);
            std::mem::forget(workers);
            return;
        }
        // each worker's next send fails, and it ends: at most one batch's work away
        drop(found);
        for worker in workers {
            let _ = worker.join();
        }
    }
}
