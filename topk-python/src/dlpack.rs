//! The DLPack C structs (the ABI every `__dlpack__` producer hands over in a PyCapsule) and
//! reading one capsule into a [`Described`] tensor. Written from the DLPack specification; the
//! capsule keeps its producer's tensor alive and frees it when Python drops the capsule, so
//! nothing here takes ownership.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::ffi::{c_void, CStr};

/// `DLDevice`.
#[repr(C)]
#[derive(Clone, Copy)]
struct DlDevice {
    device_type: i32,
    device_id: i32,
}

/// `DLDataType`: type code (0 int, 1 uint, 2 float, ...), bits, lanes.
#[repr(C)]
#[derive(Clone, Copy)]
struct DlDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

/// `DLTensor`.
#[repr(C)]
struct DlTensor {
    data: *mut c_void,
    device: DlDevice,
    ndim: i32,
    dtype: DlDataType,
    shape: *const i64,
    /// Strides in elements; null means compact row-major.
    strides: *const i64,
    byte_offset: u64,
}

/// `DLManagedTensor` (capsule name `dltensor`).
#[repr(C)]
struct DlManagedTensor {
    dl_tensor: DlTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensor)>,
}

/// `DLPackVersion`.
#[repr(C)]
struct DlPackVersion {
    major: u32,
    minor: u32,
}

/// `DLManagedTensorVersioned` (capsule name `dltensor_versioned`, DLPack 1.0).
#[repr(C)]
struct DlManagedTensorVersioned {
    version: DlPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DlTensor,
}

/// `DLPACK_FLAG_BITMASK_READ_ONLY`.
const FLAG_READ_ONLY: u64 = 1;

/// `kDLCPU`, `kDLCUDA`, `kDLCUDAHost`, `kDLCUDAManaged`.
pub const DEVICE_CPU: i32 = 1;
pub const DEVICE_CUDA: i32 = 2;
pub const DEVICE_CUDA_HOST: i32 = 3;
pub const DEVICE_CUDA_MANAGED: i32 = 13;

/// What a capsule describes, with shape and strides in elements.
#[derive(Clone, Debug)]
pub struct Described {
    pub ptr: u64,
    pub shape: Vec<i64>,
    pub strides: Vec<i64>,
    /// `f32`, `i32`, `i64`, or `code:bits:lanes` for anything else.
    pub dtype: String,
    pub device_type: i32,
    pub device_id: i32,
    pub read_only: bool,
}

fn dtype_name(t: DlDataType) -> String {
    match (t.code, t.bits, t.lanes) {
        (2, 32, 1) => "f32".into(),
        (2, 16, 1) => "f16".into(),
        (2, 64, 1) => "f64".into(),
        (4, 16, 1) => "bf16".into(),
        (0, 32, 1) => "i32".into(),
        (0, 64, 1) => "i64".into(),
        (c, b, l) => format!("{c}:{b}:{l}"),
    }
}

/// Reads a `DLTensor`.
///
/// # Safety
/// `t` must be a live DLTensor whose shape (and strides, when not null) hold `ndim` values.
unsafe fn read_tensor(t: &DlTensor, read_only: bool) -> PyResult<Described> {
    let ndim = usize::try_from(t.ndim)
        .map_err(|_| PyValueError::new_err("DLPack tensor with a negative rank"))?;
    if ndim > 0 && t.shape.is_null() {
        return Err(PyValueError::new_err("DLPack tensor without a shape"));
    }
    let shape: Vec<i64> = if ndim == 0 {
        Vec::new()
    } else {
        // SAFETY: the producer guarantees `ndim` values behind `shape`.
        unsafe { std::slice::from_raw_parts(t.shape, ndim) }.to_vec()
    };
    let strides = if t.strides.is_null() || ndim == 0 {
        let mut s = vec![1i64; ndim];
        for d in (0..ndim.saturating_sub(1)).rev() {
            s[d] = s[d + 1] * shape[d + 1].max(1);
        }
        s
    } else {
        // SAFETY: as above, for `strides`.
        unsafe { std::slice::from_raw_parts(t.strides, ndim) }.to_vec()
    };
    Ok(Described {
        ptr: (t.data as u64).wrapping_add(t.byte_offset),
        shape,
        strides,
        dtype: dtype_name(t.dtype),
        device_type: t.device.device_type,
        device_id: t.device.device_id,
        read_only,
    })
}

/// Describes the tensor in a DLPack capsule (as returned by `x.__dlpack__()`), without
/// consuming it: the capsule still owns the tensor and must outlive every use of `ptr`.
pub fn describe(capsule: &Bound<'_, PyAny>) -> PyResult<Described> {
    let raw = capsule.as_ptr();
    // SAFETY: PyCapsule_CheckExact only reads the object's type.
    if unsafe { pyo3::ffi::PyCapsule_CheckExact(raw) } == 0 {
        return Err(PyTypeError::new_err(
            "expected the PyCapsule that __dlpack__() returns",
        ));
    }
    // SAFETY: `raw` is a capsule (checked above); the name pointer lives as long as it.
    let name = unsafe { pyo3::ffi::PyCapsule_GetName(raw) };
    if name.is_null() {
        return Err(PyValueError::new_err("DLPack capsule without a name"));
    }
    // SAFETY: a capsule's name is a NUL-terminated string.
    let name = unsafe { CStr::from_ptr(name) };
    // SAFETY: `raw` is a capsule of that name; GetPointer returns its pointer.
    let pointer = unsafe { pyo3::ffi::PyCapsule_GetPointer(raw, name.as_ptr()) };
    if pointer.is_null() {
        return Err(PyValueError::new_err("DLPack capsule holds a null tensor"));
    }
    match name.to_bytes() {
        b"dltensor" => {
            // SAFETY: a `dltensor` capsule holds a live DLManagedTensor.
            let managed = unsafe { &*(pointer as *const DlManagedTensor) };
            // SAFETY: the producer keeps shape and strides alive with the tensor.
            unsafe { read_tensor(&managed.dl_tensor, false) }
        }
        b"dltensor_versioned" => {
            // SAFETY: a `dltensor_versioned` capsule holds a live DLManagedTensorVersioned.
            let managed = unsafe { &*(pointer as *const DlManagedTensorVersioned) };
            if managed.version.major != 1 {
                return Err(PyValueError::new_err(format!(
                    "DLPack version {}.{} is not supported (1.x is)",
                    managed.version.major, managed.version.minor
                )));
            }
            let read_only = managed.flags & FLAG_READ_ONLY != 0;
            // SAFETY: as above.
            unsafe { read_tensor(&managed.dl_tensor, read_only) }
        }
        b"used_dltensor" | b"used_dltensor_versioned" => Err(PyValueError::new_err(
            "this DLPack capsule was already consumed: call __dlpack__() again",
        )),
        other => Err(PyTypeError::new_err(format!(
            "not a DLPack capsule (named {:?})",
            String::from_utf8_lossy(other)
        ))),
    }
}
