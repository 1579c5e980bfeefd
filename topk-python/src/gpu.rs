//! The CUDA path: devices opened on first use, plans cached per (device, K, capacity bucket),
//! workspaces per plan and stream, and launches straight onto the caller's stream.
//!
//! Everything a launch needs besides the caller's tensors lives here and is allocated once:
//! the plan's workspace (the kernels' control words: one per stream, so two streams never share
//! one), a device array `0, 1, 2, ...` whose element `m` serves as the live row count `m` of an
//! eager call, and per width an array of full lengths for calls without lengths. Arrays that
//! grow keep their old buffers, since a captured CUDA graph may still read them. Creating any
//! of it switches the thread to relaxed stream-capture mode, so a first call inside
//! `torch.cuda.graph` plans instead of failing; the launch itself allocates nothing.

use crate::errors::to_py;
use pyo3::exceptions::{PyNotImplementedError, PyRuntimeError, PyValueError};
use pyo3::PyResult;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use topk_dsl::{Digits, Dtype, Io, Rows, Spec};
use topk_runtime::cuda::cudarc::driver::{result as cu, sys, CudaSlice, CudaStream, DevicePtr};
use topk_runtime::cuda::launch::status;
use topk_runtime::cuda::{CallBuffers, CallShape, Gpu, Plan, PlanRequest, RawBuffers, Workspace};
use topk_runtime::{Error, Result};

/// Relaxed stream-capture mode on this thread while it lives: planning and allocating are then
/// allowed while another stream of the process captures a graph.
struct RelaxedCapture {
    previous: sys::CUstreamCaptureMode,
}

impl RelaxedCapture {
    fn new() -> RelaxedCapture {
        let mut mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
        // SAFETY: only called once a device is usable (libcuda loaded); `mode` is valid.
        unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) };
        RelaxedCapture { previous: mode }
    }
}

impl Drop for RelaxedCapture {
    fn drop(&mut self) {
        // SAFETY: restores the mode this thread had.
        unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut self.previous) };
    }
}

/// The device's context made current on this thread for a launch, and the thread's previous
/// context restored afterwards (PyTorch reads its current device from it).
struct BoundContext {
    previous: Option<sys::CUcontext>,
}

impl BoundContext {
    fn bind(gpu: &Gpu) -> Result<BoundContext> {
        let ours = gpu.ctx().cu_ctx();
        let current =
            cu::ctx::get_current().map_err(|e| Error::Cuda(format!("cuCtxGetCurrent: {e}")))?;
        if current == Some(ours) {
            return Ok(BoundContext { previous: None });
        }
        // SAFETY: `ours` is the device's primary context, retained by `gpu`.
        unsafe { cu::ctx::set_current(ours) }
            .map_err(|e| Error::Cuda(format!("cuCtxSetCurrent: {e}")))?;
        Ok(BoundContext {
            previous: Some(current.unwrap_or(std::ptr::null_mut())),
        })
    }
}

impl Drop for BoundContext {
    fn drop(&mut self) {
        if let Some(previous) = self.previous {
            // SAFETY: `previous` was current on this thread a moment ago (or null: none).
            let _ = unsafe { cu::ctx::set_current(previous) };
        }
    }
}

/// Runs `f` and then makes the thread's current context the one it had before (opening a
/// device, planning and allocating bind the device's context; PyTorch reads its current device
/// from the thread's context). Fails, saying why, when no GPU is usable.
pub fn keeping_context<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    if !Gpu::available() {
        // Opening yields the reason (no driver, no device, no NVRTC, ...).
        return match Gpu::open(0) {
            Err(e) => Err(to_py(e)),
            Ok(_) => Err(PyRuntimeError::new_err("no usable CUDA device")),
        };
    }
    let saved = cu::ctx::get_current().ok().flatten();
    let result = f();
    let now = cu::ctx::get_current().ok().flatten();
    if now != saved {
        // SAFETY: `saved` was current on this thread before `f` (or null: none was).
        let _ = unsafe { cu::ctx::set_current(saved.unwrap_or(std::ptr::null_mut())) };
    }
    result
}

/// A device array of int32 that only grows; buffers it outgrew stay allocated.
#[derive(Default)]
struct GrowingArray {
    live: Option<(CudaSlice<i32>, u64)>,
    retired: Vec<CudaSlice<i32>>,
}

impl GrowingArray {
    /// A device pointer to at least `need` values `fill(i)`.
    fn at_least(&mut self, gpu: &Gpu, need: usize, fill: impl Fn(usize) -> i32) -> Result<u64> {
        if let Some((slice, ptr)) = &self.live {
            if slice.len() >= need {
                return Ok(*ptr);
            }
        }
        let cap = need.max(1024).next_power_of_two();
        let values: Vec<i32> = (0..cap).map(fill).collect();
        let _relaxed = RelaxedCapture::new();
        let stream = gpu.stream();
        let slice = stream
            .clone_htod(&values)
            .map_err(|e| Error::Cuda(format!("allocating {} bytes: {e}", cap * 4)))?;
        stream
            .synchronize()
            .map_err(|e| Error::Cuda(format!("synchronizing the upload: {e}")))?;
        let ptr = slice.device_ptr(stream).0;
        if let Some((old, _)) = self.live.replace((slice, ptr)) {
            self.retired.push(old);
        }
        Ok(ptr)
    }
}

/// A plan's workspaces, one per stream it has run on, with the stream wrapped for launches.
#[derive(Default)]
pub struct Workspaces {
    by_stream: Vec<(u64, Arc<CudaStream>, Workspace)>,
}

impl Workspaces {
    fn for_stream(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        stream: u64,
    ) -> Result<(&Arc<CudaStream>, &mut Workspace)> {
        let at = match self.by_stream.iter().position(|(s, _, _)| *s == stream) {
            Some(at) => at,
            None => {
                let _relaxed = RelaxedCapture::new();
                let workspace = Workspace::new(plan, gpu.stream())?;
                gpu.stream()
                    .synchronize()
                    .map_err(|e| Error::Cuda(format!("synchronizing the workspace: {e}")))?;
                // SAFETY: `stream` is a live stream of this device's primary context (the
                // caller's current stream); it is only used while the caller's call runs.
                let wrapped = unsafe { gpu.ctx().wrap_borrowed_stream(stream as sys::CUstream) };
                self.by_stream.push((stream, wrapped, workspace));
                self.by_stream.len() - 1
            }
        };
        let (_, wrapped, workspace) = &mut self.by_stream[at];
        Ok((wrapped, workspace))
    }

    /// Status bits of every workspace (each read on its stream, which synchronizes it), then
    /// cleared.
    fn take_status(&mut self, gpu: &Gpu) -> Result<u32> {
        let _bound = BoundContext::bind(gpu)?;
        let mut bits = 0;
        for (_, stream, workspace) in &mut self.by_stream {
            bits |= workspace.status(stream)?;
            workspace.clear_status(stream)?;
        }
        Ok(bits)
    }
}

/// The capacity bucket of an eager call: rows and width rounded up to powers of two, so a
/// handful of plans serve calls of every size.
fn bucket(rows: u32, width: u32) -> (u32, u32) {
    let max_width = topk_runtime::cuda::plan::MAX_WIDTH;
    (
        rows.max(1).next_power_of_two(),
        width
            .max(1)
            .checked_next_power_of_two()
            .unwrap_or(max_width)
            .min(max_width),
    )
}

/// What an eager plan is cached under: K, the capacity bucket, the score dtype and the
/// interface.
type PlanKey = (u32, u32, u32, Dtype, Io);

/// The spec of a plan for a call interface beyond the plain float32 operator: the default
/// map's choice for the shape on this device (the autotune store's records are for the plain
/// operator) with the score dtype and the interface. `NotImplementedError` with the sentence
/// of `Spec::gpu_unsupported` for what the kernels do not generate yet.
pub fn interface_spec(
    gpu: &Gpu,
    k: u32,
    m_cap: u32,
    width: u32,
    dtype: Dtype,
    io: Io,
) -> PyResult<Spec> {
    let mut spec = topk_runtime::policy::default_spec(&gpu.facts(), k, m_cap, width);
    if dtype != Dtype::F32 {
        spec.digits = Digits::default_for(dtype, spec.coarse_bits);
    }
    spec.dtype = dtype;
    spec.io = io;
    refuse_unsupported(&spec)?;
    spec.validate().map_err(|e| to_py(e.into()))?;
    Ok(spec)
}

/// What of `spec` the GPU kernels do not generate yet, as the Python package says it: the
/// sentence of `Spec::gpu_unsupported` (the single source of that list) and the Python way
/// to the CPU backend.
pub fn unsupported_message(spec: &Spec) -> Option<String> {
    spec.gpu_unsupported().map(|why| {
        format!(
            "on CUDA inputs: {why}; from Python, pass CPU tensors or NumPy arrays (the CPU \
             backend implements the whole call interface)"
        )
    })
}

/// `NotImplementedError` saying what of `spec` the GPU kernels do not generate yet, if any.
pub fn refuse_unsupported(spec: &Spec) -> PyResult<()> {
    match unsupported_message(spec) {
        Some(why) => Err(PyNotImplementedError::new_err(why)),
        None => Ok(()),
    }
}

/// A plan for `k` over `m_cap` rows of `width` with `dtype` scores and interface `io`: the
/// planner's own choice (autotune store or default map) for the plain float32 operator.
fn plan_for(gpu: &Gpu, k: u32, m_cap: u32, width: u32, dtype: Dtype, io: Io) -> PyResult<Plan> {
    let _relaxed = RelaxedCapture::new();
    let request = PlanRequest::new(k, m_cap, width);
    if dtype == Dtype::F32 && io.is_default() {
        return Plan::new(gpu, request).map_err(to_py);
    }
    let spec = interface_spec(gpu, k, m_cap, width, dtype, io)?;
    Plan::new(gpu, request.with_spec(spec)).map_err(to_py)
}

/// One device: its handle, the eager plans and the shared device arrays.
struct Device {
    gpu: Gpu,
    plans: HashMap<PlanKey, Box<(Plan, Workspaces)>>,
    counts: GrowingArray,
    full_lengths: HashMap<u32, GrowingArray>,
}

impl Device {
    fn open(ordinal: usize) -> Result<Device> {
        if !Gpu::available() {
            // Opening yields the reason (no driver, no device, no NVRTC, ...).
            Gpu::open(ordinal)?;
        }
        let _relaxed = RelaxedCapture::new();
        Ok(Device {
            gpu: Gpu::open(ordinal)?,
            plans: HashMap::new(),
            counts: GrowingArray::default(),
            full_lengths: HashMap::new(),
        })
    }

    /// A device pointer to the int `rows`.
    fn live_rows(&mut self, rows: u32) -> Result<u64> {
        let base = self
            .counts
            .at_least(&self.gpu, rows as usize + 1, |i| i as i32)?;
        Ok(base + 4 * rows as u64)
    }

    /// A device pointer to `rows` lengths equal to `width`.
    fn full_lengths(&mut self, width: u32, rows: u32) -> Result<u64> {
        self.full_lengths
            .entry(width)
            .or_default()
            .at_least(&self.gpu, rows as usize, |_| width as i32)
    }
}

static DEVICES: Mutex<Vec<(usize, Device)>> = Mutex::new(Vec::new());

fn devices() -> MutexGuard<'static, Vec<(usize, Device)>> {
    DEVICES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn device(list: &mut Vec<(usize, Device)>, ordinal: usize) -> Result<&mut Device> {
    let at = match list.iter().position(|(o, _)| *o == ordinal) {
        Some(at) => at,
        None => {
            list.push((ordinal, Device::open(ordinal)?));
            list.len() - 1
        }
    };
    Ok(&mut list[at].1)
}

/// The device handle of `ordinal` (opened on first use).
pub fn gpu(ordinal: usize) -> Result<Gpu> {
    Ok(device(&mut devices(), ordinal)?.gpu.clone())
}

/// The call interface of a CUDA call (`docs/interface.md`): the score dtype, the spec's form
/// and the device buffers of its row source, transform and values.
#[derive(Clone, Copy, Debug)]
pub struct Interface {
    pub dtype: Dtype,
    pub io: Io,
    pub buffers: CallBuffers,
}

impl Interface {
    /// The plain operator: float32 scores, lengths, indices only.
    pub const PLAIN: Interface = Interface {
        dtype: Dtype::F32,
        io: Io::DEFAULT,
        buffers: CallBuffers::PLAIN,
    };

    fn is_plain(&self) -> bool {
        self.dtype == Dtype::F32 && self.io.is_default()
    }
}

/// One call on device pointers: `lengths` 0 means every row full (with `rows=lengths`),
/// `live_rows` 0 means all `rows` rows live.
#[derive(Clone, Copy, Debug)]
pub struct DeviceCall {
    pub device: usize,
    pub stream: u64,
    pub scores: u64,
    pub rows: u32,
    pub width: u32,
    pub pitch: u64,
    pub lengths: u64,
    pub live_rows: u64,
    pub out: u64,
    pub out_pitch: u64,
    pub k: u32,
    pub iface: Interface,
}

impl DeviceCall {
    fn shape(&self) -> CallShape {
        CallShape {
            rows: self.rows,
            width: self.width,
            pitch: self.pitch,
            out_pitch: self.out_pitch,
        }
    }
}

/// Device pointers for the call's lengths and live row count (the shared arrays when the
/// caller gave none).
fn inputs(dev: &mut Device, call: &DeviceCall) -> Result<(u64, u64)> {
    let lengths = match (call.lengths, call.iface.io.rows) {
        (0, Rows::Lengths) => dev.full_lengths(call.width, call.rows)?,
        (given, _) => given,
    };
    let live = match call.live_rows {
        0 => dev.live_rows(call.rows)?,
        given => given,
    };
    Ok((lengths, live))
}

/// Launches `call` with `plan` on the call's stream; with `check`, clears the status first and
/// reads it after (synchronizing the stream), returning the bits raised.
///
/// # Safety
/// The pointers of `call` must be live device memory of this device with the extents of
/// `call` (see `Plan::launch_call_with`), and `call.stream` a live stream of its primary
/// context.
unsafe fn launch(
    gpu: &Gpu,
    plan: &Plan,
    workspaces: &mut Workspaces,
    call: &DeviceCall,
    lengths: u64,
    live_rows: u64,
    check: bool,
) -> Result<u32> {
    let _bound = BoundContext::bind(gpu)?;
    let (stream, workspace) = workspaces.for_stream(gpu, plan, call.stream)?;
    if check {
        workspace.clear_status(stream)?;
    }
    let io = RawBuffers {
        scores: call.scores,
        lengths,
        live_rows,
        out: call.out,
        row_info: 0,
    };
    // SAFETY: forwarded from the caller.
    unsafe { plan.launch_call_with(stream, call.shape(), io, &call.iface.buffers, workspace)? };
    if !check {
        return Ok(0);
    }
    let bits = workspace.status(stream)?;
    if bits != 0 {
        workspace.clear_status(stream)?;
    }
    Ok(bits)
}

/// An eager call: the plan of the call's capacity bucket, created on first use. With `check`,
/// the status bits the kernels raised (the stream synchronized); 0 otherwise.
///
/// # Safety
/// As [`launch`].
pub unsafe fn launch_eager(call: &DeviceCall, check: bool) -> PyResult<(u32, u64)> {
    let mut list = devices();
    let dev = device(&mut list, call.device).map_err(to_py)?;
    let (rows, width) = bucket(call.rows, call.width);
    let key = (call.k, rows, width, call.iface.dtype, call.iface.io);
    if !dev.plans.contains_key(&key) {
        let plan = plan_for(
            &dev.gpu,
            call.k,
            rows,
            width,
            call.iface.dtype,
            call.iface.io,
        )?;
        dev.plans
            .insert(key, Box::new((plan, Workspaces::default())));
    }
    let (lengths, live) = inputs(dev, call).map_err(to_py)?;
    let gpu = dev.gpu.clone();
    let entry = dev.plans.get_mut(&key).expect("inserted above");
    let (plan, workspaces) = &mut **entry;
    // SAFETY: forwarded from the caller.
    let bits =
        unsafe { launch(&gpu, plan, workspaces, call, lengths, live, check) }.map_err(to_py)?;
    Ok((bits, lengths))
}

/// An eager call of the plain operator; with `check`, raises on the status bits, naming the
/// offending row.
///
/// # Safety
/// As [`launch`].
pub unsafe fn select(call: DeviceCall, check: bool) -> PyResult<()> {
    // SAFETY: forwarded from the caller.
    let (bits, lengths) = unsafe { launch_eager(&call, check)? };
    if bits == 0 {
        return Ok(());
    }
    Err(status_error(bits, locate(&call, lengths)))
}

/// What the status bits say, with the offending row when it was found.
pub fn status_error(bits: u32, found: Option<String>) -> pyo3::PyErr {
    let mut what = Vec::new();
    if bits & status::NAN != 0 {
        what.push("a valid score is NaN (outside the Top-K contract: mask NaN, e.g. to -inf)");
    }
    if bits & status::BAD_LENGTH != 0 {
        what.push("a length is outside [0, width] (that row was treated as empty)");
    }
    if bits & status::BAD_ROWS != 0 {
        what.push("the live row count is outside [0, rows] (it was clamped)");
    }
    if bits & status::BAD_TRANSFORM != 0 {
        what.push(
            "an index transform made an index outside the non-negative int32 range or used a \
             page beyond the table or a negative page entry (that index was written as -1)",
        );
    }
    let mut msg = format!(
        "the Top-K kernels reported invalid input (status {bits:#x}): {}",
        what.join("; ")
    );
    if let Some(found) = found {
        msg.push_str(&format!("; {found}"));
    }
    PyValueError::new_err(msg)
}

/// Finds the first row with a length outside `[0, width]` or, among rows the kernels read
/// (length above K), the first NaN, by reading the call's inputs back.
fn locate(call: &DeviceCall, lengths: u64) -> Option<String> {
    if !call.iface.is_plain() {
        return None; // the Python layer re-runs such a call on the CPU backend to name the row
    }
    let gpu = gpu(call.device).ok()?;
    let _bound = BoundContext::bind(&gpu).ok()?;
    let mut lens = vec![0i32; call.rows as usize];
    // SAFETY: `lengths` holds `rows` int32 of this device (the call's own, or ours).
    unsafe { cu::memcpy_dtoh_sync(&mut lens, lengths) }.ok()?;
    if let Some(row) = lens.iter().position(|&l| l < 0 || l as u32 > call.width) {
        return Some(format!("row {row} has length {}", lens[row]));
    }
    let mut scores = Vec::new();
    for (row, &len) in lens.iter().enumerate() {
        if len as u32 <= call.k {
            continue;
        }
        scores.resize(len as usize, 0f32);
        let at = call.scores + row as u64 * call.pitch * 4;
        // SAFETY: row `row` holds `len <= width` readable scores at `at`.
        unsafe { cu::memcpy_dtoh_sync(&mut scores, at) }.ok()?;
        if let Some(col) = scores.iter().position(|x| x.is_nan()) {
            return Some(format!("row {row}, column {col} is NaN"));
        }
    }
    None
}

/// A plan for fixed capacities and its workspaces: what `topk.Selector` holds on a GPU.
pub struct Selector {
    pub device: usize,
    gpu: Gpu,
    pub plan: Plan,
    workspaces: Mutex<Workspaces>,
}

impl Selector {
    pub fn new(
        device_ordinal: usize,
        k: u32,
        max_rows: u32,
        max_width: u32,
        dtype: Dtype,
        io: Io,
    ) -> PyResult<Selector> {
        let gpu = gpu(device_ordinal).map_err(to_py)?;
        let plan = plan_for(&gpu, k, max_rows, max_width, dtype, io)?;
        Ok(Selector {
            device: device_ordinal,
            gpu,
            plan,
            workspaces: Mutex::new(Workspaces::default()),
        })
    }

    fn workspaces(&self) -> MutexGuard<'_, Workspaces> {
        self.workspaces
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Launches one call (see [`DeviceCall`]); `call.device`, `call.k` and the interface's
    /// form must be the plan's.
    ///
    /// # Safety
    /// As [`launch`].
    pub unsafe fn run(&self, call: DeviceCall) -> PyResult<()> {
        self.plan.check_call(&call.shape()).map_err(to_py)?;
        let (lengths, live) = {
            let mut list = devices();
            let dev = device(&mut list, self.device).map_err(to_py)?;
            inputs(dev, &call).map_err(to_py)?
        };
        let mut workspaces = self.workspaces();
        // SAFETY: forwarded from the caller.
        unsafe {
            launch(
                &self.gpu,
                &self.plan,
                &mut workspaces,
                &call,
                lengths,
                live,
                false,
            )
        }
        .map_err(to_py)
        .map(|_| ())
    }

    /// The status bits raised since the last check, on every stream; cleared.
    pub fn take_status(&self) -> PyResult<u32> {
        self.workspaces().take_status(&self.gpu).map_err(to_py)
    }

    /// Finds the offending row of a call of this selector's inputs (see [`locate`]).
    pub fn locate(&self, call: &DeviceCall) -> Option<String> {
        let lengths = {
            let mut list = devices();
            let dev = device(&mut list, self.device).ok()?;
            inputs(dev, call).ok()?.0
        };
        locate(call, lengths)
    }
}

/// Waits for every device, then frees every cached plan, workspace and array.
pub fn release() -> PyResult<()> {
    let mut list = devices();
    for (_, dev) in list.iter() {
        let _bound = BoundContext::bind(&dev.gpu).map_err(to_py)?;
        dev.gpu
            .ctx()
            .synchronize()
            .map_err(|e| PyRuntimeError::new_err(format!("synchronizing the device: {e}")))?;
    }
    list.clear();
    Ok(())
}

/// The family of a plan as a short name.
pub fn family_name(plan: &Plan) -> &'static str {
    use topk_codegen::Family;
    match plan.family() {
        Family::Persistent => "persistent",
        Family::RowLocalRegister => "rowlocal_register",
        Family::RowLocalStreaming => "rowlocal_streaming",
        Family::KvSplit { .. } => "kvsplit",
        Family::Cluster { .. } => "cluster",
        Family::Staged => "staged",
    }
}
