//! `groupclient.consumer._native`: the compiled record path (docs/performance.md).
//!
//! One call decodes one v2 record batch of a fetch answer into a list of `ConsumerRecord`s,
//! exactly as groupclient/consumer/records.py's `_decode_v2` makes them.  The CRC check, the
//! decompression and the parsing touch no Python object and run with the interpreter lock
//! released when the batch is large enough to be worth handing the lock over; the records are
//! then built with the lock held, and the deserializers (Python callables) called in order.
//!
//! A record holding only objects the garbage collector does not follow (bytes, str, int, None,
//! tuples of them) is untracked as soon as it is made, as CPython untracks such a tuple at its
//! first collection: records waiting in a buffer cost full collections nothing.  Its headers are
//! untracked too, kafka-python's list included: a list the collector does not follow can only
//! matter if the application puts the record (or something that refers to it) in its own
//! headers, a cycle that is then never collected.  Tracked, a record and its list cost a 100 B
//! record's decoding two thirds of its time in collections (1.7M records/s against 4.6M with
//! the collector off, the same run), and they filled the old generation that full collections
//! walk.

mod ahead;
mod batch;
mod codecs;

use batch::{Parsed, Span, Step};
use pyo3::exceptions::PyException;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple, PyType};

/// the outcomes of `decode_batch`, as records.py reads them
const RECORDS: u8 = 0;
const END: u8 = 1;
const PYTHON: u8 = 2;
const DESERIALIZER: u8 = 3;

/// Bytes of a batch (its CRC, decompression and parsing) below which the interpreter lock is
/// kept: handing it over and taking it back costs more than the work.
const RELEASE_AT: usize = 32 * 1024;

const FIELDS: usize = 13;

/// decode_batch(buf, pos, fetch_offset, topic, partition, key_deserializer, value_deserializer,
/// check_crcs, aiokafka, record_type) -> (outcome, position, payload)
///
/// The next batch of `buf` from byte `pos` on with records at or after `fetch_offset`:
/// `(0, next position, [records])`; `(1, pos, None)` at the end of the complete batches;
/// `(2, pos, None)`: the batch at `pos` is the Python path's (an old message format, a CRC
/// mismatch, an unknown codec, malformed records); `(3, pos, (offset, "key" or "value",
/// exception, records before it))`: a deserializer raised.
#[pyfunction]
#[pyo3(signature = (buf, pos, fetch_offset, topic, partition, key_deserializer, value_deserializer,
                    check_crcs, aiokafka, record_type))]
#[allow(clippy::too_many_arguments)]
fn decode_batch<'py>(
    py: Python<'py>,
    buf: &Bound<'py, PyBytes>,
    pos: usize,
    fetch_offset: i64,
    topic: &Bound<'py, PyString>,
    partition: &Bound<'py, PyAny>,
    key_deserializer: Option<&Bound<'py, PyAny>>,
    value_deserializer: Option<&Bound<'py, PyAny>>,
    check_crcs: bool,
    aiokafka: bool,
    record_type: &Bound<'py, PyType>,
) -> PyResult<Bound<'py, PyTuple>> {
    let data = buf.as_bytes();
    let step = if data.len().saturating_sub(pos) >= RELEASE_AT && next_batch_len(data, pos) >= RELEASE_AT {
        py.detach(|| batch::step(data, pos, fetch_offset, check_crcs))
    } else {
        batch::step(data, pos, fetch_offset, check_crcs)
    };
    let parsed = match step {
        Step::End => return (END, pos, py.None()).into_pyobject(py),
        Step::Python | Step::Skip(_) => return (PYTHON, pos, py.None()).into_pyobject(py), // (no Skip from step)
        Step::Batch(parsed) => parsed,
    };
    let maker = Maker { py, data, topic, partition, key_deserializer, value_deserializer, aiokafka, record_type };
    built(py, &maker, &parsed, pos)
}

/// A parsed batch's answer: `(RECORDS, next position, records)`, or `(DESERIALIZER, pos, ...)`.
fn built<'py>(py: Python<'py>, maker: &Maker<'_, 'py>, parsed: &Parsed, pos: usize) -> PyResult<Bound<'py, PyTuple>> {
    match maker.records(parsed)? {
        Made::All(records) => (RECORDS, parsed.next, records).into_pyobject(py),
        Made::Failed { offset, which, error, before } => {
            (DESERIALIZER, pos, (offset, which, error, before)).into_pyobject(py)
        }
    }
}

/// The length of the batch at `pos` as its header says (0 when there is none to read).
fn next_batch_len(data: &[u8], pos: usize) -> usize {
    match data.get(pos + 8..pos + 12) {
        Some(length) => usize::try_from(i32::from_be_bytes(length.try_into().expect("4 bytes"))).unwrap_or(0),
        None => 0,
    }
}

enum Made<'py> {
    All(Bound<'py, PyList>),
    Failed { offset: i64, which: &'static str, error: PyErr, before: Bound<'py, PyList> },
}

struct Maker<'a, 'py> {
    py: Python<'py>,
    data: &'a [u8],
    topic: &'a Bound<'py, PyString>,
    partition: &'a Bound<'py, PyAny>,
    key_deserializer: Option<&'a Bound<'py, PyAny>>,
    value_deserializer: Option<&'a Bound<'py, PyAny>>,
    aiokafka: bool,
    record_type: &'a Bound<'py, PyType>,
}

impl<'py> Maker<'_, 'py> {
    fn records(&self, parsed: &Parsed) -> PyResult<Made<'py>> {
        let py = self.py;
        let section = parsed.section.bytes(self.data);
        let out = PyList::empty(py);
        let epoch = parsed.epoch.into_pyobject(py)?.into_any();
        let timestamp_type = parsed.timestamp_type.into_pyobject(py)?.into_any();
        let no_header_size = (-1i64).into_pyobject(py)?.into_any();
        // the fields the collector could follow: the partition (the caller's object, once per
        // batch) and a deserializer's outcome; the rest are ints, str, bytes and None made here,
        // and the headers untracked (Maker::headers)
        let partition_followed = may_be_followed(self.partition);
        for record in &parsed.records {
            let key = bytes_or_none(py, section, record.key);
            let value = bytes_or_none(py, section, record.value);
            let headers = self.headers(parsed, section, record)?;
            let key = match self.deserialize(self.key_deserializer, key, &headers) {
                Ok(key) => key,
                Err(error) => return self.failed(record.offset, "key", error, out),
            };
            let value = match self.deserialize(self.value_deserializer, value, &headers) {
                Ok(value) => value,
                Err(error) => return self.failed(record.offset, "value", error, out),
            };
            let header_size = if record.header_size == -1 {
                no_header_size.clone()
            } else {
                record.header_size.into_pyobject(py)?.into_any()
            };
            let followed = partition_followed
                || (self.key_deserializer.is_some() && may_be_followed(&key))
                || (self.value_deserializer.is_some() && may_be_followed(&value));
            let fields: [Bound<'py, PyAny>; FIELDS] = [
                self.topic.clone().into_any(),
                self.partition.clone(),
                epoch.clone(),
                record.offset.into_pyobject(py)?.into_any(),
                record.timestamp.into_pyobject(py)?.into_any(),
                timestamp_type.clone(),
                key,
                value,
                headers,
                py.None().into_bound(py),
                record.key.len.into_pyobject(py)?.into_any(),
                record.value.len.into_pyobject(py)?.into_any(),
                header_size,
            ];
            out.append(self.new_record(fields, followed)?)?;
        }
        Ok(Made::All(out))
    }

    /// A deserializer's outcome, or the key or value itself: kafka-python's records call it for
    /// a present one only, aiokafka's for a missing one too (with None).
    fn deserialize(&self, deserializer: Option<&Bound<'py, PyAny>>, raw: Bound<'py, PyAny>,
                   headers: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        match deserializer {
            Some(call) if self.aiokafka || !raw.is_none() => call.call1((raw, headers)),
            _ => Ok(raw),
        }
    }

    /// What a deserializer raised, for records.py to raise as a RecordDeserializationError after
    /// the records before it; an exception that is not an ``Exception`` (KeyboardInterrupt...)
    /// goes up as it is, as from the Python path's ``except Exception``.
    fn failed(&self, offset: i64, which: &'static str, error: PyErr, before: Bound<'py, PyList>)
        -> PyResult<Made<'py>> {
        if !error.is_instance_of::<PyException>(self.py) {
            return Err(error);
        }
        Ok(Made::Failed { offset, which, error, before })
    }

    /// The record's headers: a list of (str, bytes or None) pairs, or a tuple of them for
    /// aiokafka's records (the empty tuple when there are none).
    fn headers(&self, parsed: &Parsed, section: &[u8], record: &batch::Record) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        let mut pairs = Vec::new();
        if let Some(range) = &record.headers {
            for header in &parsed.headers[range.clone()] {
                let key = std::str::from_utf8(&section[header.key.clone()]).expect("checked when parsed");
                let value = bytes_or_none(py, section, header.value);
                let pair = PyTuple::new(py, [PyString::new(py, key).into_any(), value])?;
                untrack(pair.as_any()); // a str and a bytes (or None): nothing to follow
                pairs.push(pair);
            }
        }
        let headers = if self.aiokafka { PyTuple::new(py, pairs)?.into_any() } else { PyList::new(py, pairs)?.into_any() };
        // kafka-python's headers are a list: mutable, but nothing of groupclient's changes it,
        // and it holds untracked pairs only (see the module doc)
        untrack(&headers);
        Ok(headers)
    }

    /// ``tuple.__new__(record_type, fields)``, as records.py makes a record (no Python frame);
    /// untracked by the collector unless one of its fields may be ``followed``.
    fn new_record(&self, fields: [Bound<'py, PyAny>; FIELDS], followed: bool) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        // SAFETY: record_type is a tuple subclass (a namedtuple): PyType_GenericAlloc makes an
        // instance of FIELDS empty slots, which PyTuple_SetItem fills (each call takes over the
        // reference it is given) before the object is shared with anything.
        unsafe {
            let record = ffi::PyType_GenericAlloc(self.record_type.as_type_ptr(), FIELDS as ffi::Py_ssize_t);
            let record = Bound::from_owned_ptr_or_err(py, record)?;
            for (i, field) in fields.into_iter().enumerate() {
                if ffi::PyTuple_SetItem(record.as_ptr(), i as ffi::Py_ssize_t, field.into_ptr()) != 0 {
                    return Err(PyErr::fetch(py));
                }
            }
            if !followed {
                ffi::PyObject_GC_UnTrack(record.as_ptr().cast());
            }
            Ok(record)
        }
    }
}

fn bytes_or_none<'py>(py: Python<'py>, section: &[u8], span: Span) -> Bound<'py, PyAny> {
    if span.len < 0 {
        return py.None().into_bound(py);
    }
    PyBytes::new(py, &section[span.start..span.start + span.len as usize]).into_any()
}

/// Whether the collector follows, or may come to follow, `object`: CPython's rule for untracking
/// a tuple (`_PyObject_GC_MAY_BE_TRACKED`): an object of a collected type, unless it is an exact
/// tuple it does not track (immutable, of untracked objects).  A dict untracked now is tracked
/// as soon as a container is put in it, which could be its record.
fn may_be_followed(object: &Bound<'_, PyAny>) -> bool {
    let ptr = object.as_ptr();
    // SAFETY: a live object
    unsafe {
        let collected_type = ffi::PyType_GetFlags(ffi::Py_TYPE(ptr)) & ffi::Py_TPFLAGS_HAVE_GC != 0;
        collected_type && (ffi::PyTuple_CheckExact(ptr) == 0 || ffi::PyObject_GC_IsTracked(ptr) != 0)
    }
}

fn untrack(object: &Bound<'_, PyAny>) {
    // SAFETY: the object was just made by the caller, holds only objects the collector does
    // not follow, and nothing else refers to it yet
    unsafe {
        if ffi::PyObject_GC_IsTracked(object.as_ptr()) != 0 {
            ffi::PyObject_GC_UnTrack(object.as_ptr().cast());
        }
    }
}

/// The version of the compiled record path (the crate's), for ``groupclient --version``.
#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(decode_batch, module)?)?;
    module.add_function(wrap_pyfunction!(ahead::decode_ahead, module)?)?;
    module.add_class::<ahead::Ahead>()?;
    module.add("VERSION", env!("CARGO_PKG_VERSION"))?;
    module.add("RECORDS", RECORDS)?;
    module.add("END", END)?;
    module.add("PYTHON", PYTHON)?;
    module.add("DESERIALIZER", DESERIALIZER)?;
    Ok(())
}
