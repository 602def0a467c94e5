//! Columns handed to Python through the Arrow C data interface
//! (<https://arrow.apache.org/docs/format/CDataInterface.html>) and its
//! PyCapsule protocol (`__arrow_c_array__`), so that polars takes the
//! native decoder's vectors as they are: no copy, no Python object per
//! record, no Arrow crate. Only what the flow table needs is here: a struct
//! array of primitive, timestamp and string-view (`vu`) children, none of
//! them with nulls.
//!
//! Ownership: the parent array (and schema) owns every buffer of its
//! children; the children's release callbacks only mark them released.
//! A consumer that keeps a child keeps the parent (polars does: its
//! imported arrays hold the parent's `ArrowArray` until the last is dropped).

use std::ffi::{c_char, c_void, CString};

use pyo3::prelude::*;
use pyo3::types::PyCapsule;

#[repr(C)]
pub struct ArrowSchema {
    format: *const c_char,
    name: *const c_char,
    metadata: *const c_char,
    flags: i64,
    n_children: i64,
    children: *mut *mut ArrowSchema,
    dictionary: *mut ArrowSchema,
    release: Option<unsafe extern "C" fn(*mut ArrowSchema)>,
    private_data: *mut c_void,
}

#[repr(C)]
pub struct ArrowArray {
    length: i64,
    null_count: i64,
    offset: i64,
    n_buffers: i64,
    n_children: i64,
    buffers: *mut *const c_void,
    children: *mut *mut ArrowArray,
    dictionary: *mut ArrowArray,
    release: Option<unsafe extern "C" fn(*mut ArrowArray)>,
    private_data: *mut c_void,
}

/// One buffer of a column (after its absent validity bitmap).
pub enum Buffer {
    I64(Vec<i64>),
    U64(Vec<u64>),
    I32(Vec<i32>),
    I16(Vec<i16>),
    Bytes(Vec<u8>),
    Views(Vec<u128>),
}

impl Buffer {
    fn ptr(&self) -> *const c_void {
        match self {
            Buffer::I64(v) => v.as_ptr() as *const c_void,
            Buffer::U64(v) => v.as_ptr() as *const c_void,
            Buffer::I32(v) => v.as_ptr() as *const c_void,
            Buffer::I16(v) => v.as_ptr() as *const c_void,
            Buffer::Bytes(v) => v.as_ptr() as *const c_void,
            Buffer::Views(v) => v.as_ptr() as *const c_void,
        }
    }
}

/// A column: its name, its Arrow format string (`l` int64, `L` uint64, `i`
/// int32, `s` int16, `tsu:UTC` timestamp in microseconds, `vu` utf8 view)
/// and its buffers after the validity bitmap (a view column: the views, its
/// data buffers, then the sizes of the data buffers as int64).
pub struct Column {
    pub name: &'static str,
    pub format: &'static str,
    pub buffers: Vec<Buffer>,
}

/// Strings as Arrow views (16 bytes each: the length, then the string
/// itself if at most 12 bytes, else its first 4 bytes, the index of its
/// data buffer and its offset there).
#[derive(Default)]
pub struct Views {
    pub views: Vec<u128>,
    pub data: Vec<Vec<u8>>,
}

/// Bytes of a data buffer before the next one is begun (offsets are int32).
const DATA_BUFFER: usize = 1 << 30;

impl Views {
    #[inline]
    pub fn push(&mut self, text: &[u8]) {
        let n = text.len();
        let view = if n <= 12 {
            let mut inline = [0u8; 16];
            inline[..4].copy_from_slice(&(n as u32).to_le_bytes());
            inline[4..4 + n].copy_from_slice(text);
            u128::from_le_bytes(inline)
        } else {
            if self.data.last().is_none_or(|d| d.len() + n > DATA_BUFFER) {
                self.data.push(Vec::new());
            }
            let index = self.data.len() - 1;
            let data = &mut self.data[index];
            let offset = data.len();
            data.extend_from_slice(text);
            let prefix = u32::from_le_bytes([text[0], text[1], text[2], text[3]]);
            (n as u128) | (prefix as u128) << 32 | (index as u128) << 64 | (offset as u128) << 96
        };
        self.views.push(view);
    }

    pub fn clear(&mut self) {
        self.views.clear();
        self.data.clear();
    }

    /// The column's buffers (views, data, data sizes).
    pub fn into_buffers(self) -> Vec<Buffer> {
        let sizes: Vec<i64> = self.data.iter().map(|d| d.len() as i64).collect();
        let mut out = vec![Buffer::Views(self.views)];
        out.extend(self.data.into_iter().map(Buffer::Bytes));
        out.push(Buffer::I64(sizes));
        out
    }
}

#[repr(transparent)]
struct Exported<T>(T);
// SAFETY: the raw pointers point into the heap data the value owns, which no other thread touches
unsafe impl<T> Send for Exported<T> {}

struct SchemaData {
    _strings: Vec<CString>,
    children: Vec<Box<ArrowSchema>>,
    child_pointers: Vec<*mut ArrowSchema>,
}

struct ArrayData {
    _columns: Vec<Column>,
    children: Vec<Box<ArrowArray>>,
    child_pointers: Vec<*mut ArrowArray>,
    buffer_pointers: Vec<Vec<*const c_void>>,
    parent_buffers: Vec<*const c_void>,
}

unsafe extern "C" fn release_schema(schema: *mut ArrowSchema) {
    if schema.is_null() {
        return;
    }
    let schema = &mut *schema;
    if !schema.private_data.is_null() {
        drop(Box::from_raw(schema.private_data as *mut SchemaData));
        schema.private_data = std::ptr::null_mut();
    }
    schema.release = None;
}

unsafe extern "C" fn release_child_schema(schema: *mut ArrowSchema) {
    if !schema.is_null() {
        (*schema).release = None;
    }
}

unsafe extern "C" fn release_array(array: *mut ArrowArray) {
    if array.is_null() {
        return;
    }
    let array = &mut *array;
    if !array.private_data.is_null() {
        drop(Box::from_raw(array.private_data as *mut ArrayData));
        array.private_data = std::ptr::null_mut();
    }
    array.release = None;
}

unsafe extern "C" fn release_child_array(array: *mut ArrowArray) {
    if !array.is_null() {
        (*array).release = None;
    }
}

const NULLABLE: i64 = 2;

fn schema_of(columns: &[Column]) -> ArrowSchema {
    let mut strings = vec![CString::new("+s").unwrap(), CString::new("").unwrap()];
    let mut children = Vec::with_capacity(columns.len());
    for column in columns {
        let (format, name) = (CString::new(column.format).unwrap(), CString::new(column.name).unwrap());
        children.push(Box::new(ArrowSchema {
            format: format.as_ptr(),
            name: name.as_ptr(),
            metadata: std::ptr::null(),
            flags: NULLABLE,
            n_children: 0,
            children: std::ptr::null_mut(),
            dictionary: std::ptr::null_mut(),
            release: Some(release_child_schema),
            private_data: std::ptr::null_mut(),
        }));
        strings.push(format);
        strings.push(name);
    }
    let child_pointers: Vec<*mut ArrowSchema> = children.iter_mut().map(|c| &mut **c as *mut ArrowSchema).collect();
    let (format, name) = (strings[0].as_ptr(), strings[1].as_ptr());
    let mut data = Box::new(SchemaData { _strings: strings, children, child_pointers });
    let n_children = data.children.len() as i64;
    let children = data.child_pointers.as_mut_ptr();
    ArrowSchema {
        format,
        name,
        metadata: std::ptr::null(),
        flags: 0,
        n_children,
        children,
        dictionary: std::ptr::null_mut(),
        release: Some(release_schema),
        private_data: Box::into_raw(data) as *mut c_void,
    }
}

fn array_of(length: usize, columns: Vec<Column>) -> ArrowArray {
    let buffer_pointers: Vec<Vec<*const c_void>> = columns
        .iter()
        .map(|c| std::iter::once(std::ptr::null()).chain(c.buffers.iter().map(Buffer::ptr)).collect())
        .collect();
    let mut data = Box::new(ArrayData {
        _columns: columns,
        children: Vec::new(),
        child_pointers: Vec::new(),
        buffer_pointers,
        parent_buffers: vec![std::ptr::null()],
    });
    let data_ref = &mut *data;
    for pointers in data_ref.buffer_pointers.iter_mut() {
        data_ref.children.push(Box::new(ArrowArray {
            length: length as i64,
            null_count: 0,
            offset: 0,
            n_buffers: pointers.len() as i64,
            n_children: 0,
            buffers: pointers.as_mut_ptr(),
            children: std::ptr::null_mut(),
            dictionary: std::ptr::null_mut(),
            release: Some(release_child_array),
            private_data: std::ptr::null_mut(),
        }));
    }
    data_ref.child_pointers = data_ref.children.iter_mut().map(|c| &mut **c as *mut ArrowArray).collect();
    let n_children = data_ref.children.len() as i64;
    let children = data_ref.child_pointers.as_mut_ptr();
    let buffers = data_ref.parent_buffers.as_mut_ptr();
    ArrowArray {
        length: length as i64,
        null_count: 0,
        offset: 0,
        n_buffers: 1,
        n_children,
        buffers,
        children,
        dictionary: std::ptr::null_mut(),
        release: Some(release_array),
        private_data: Box::into_raw(data) as *mut c_void,
    }
}

/// `(schema capsule, array capsule)` of a struct array of `columns`, each
/// `length` long, as `__arrow_c_array__` returns them.
pub fn capsules(py: Python<'_>, length: usize, columns: Vec<Column>) -> PyResult<(Bound<'_, PyCapsule>, Bound<'_, PyCapsule>)> {
    let schema = Exported(schema_of(&columns));
    let array = Exported(array_of(length, columns));
    let schema = PyCapsule::new_with_destructor(py, schema, Some(CString::new("arrow_schema").unwrap()), |mut s, _| {
        if let Some(release) = s.0.release {
            // SAFETY: not moved out by a consumer (release still set): ours to release
            unsafe { release(&mut s.0) };
        }
    })?;
    let array = PyCapsule::new_with_destructor(py, array, Some(CString::new("arrow_array").unwrap()), |mut a, _| {
        if let Some(release) = a.0.release {
            // SAFETY: as above
            unsafe { release(&mut a.0) };
        }
    })?;
    Ok((schema, array))
}
