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

mod buffers;
mod context;
mod plans;

use crate::errors::to_py;
use buffers::{GrowingArray, Workspaces};
pub use context::keeping_context;
use context::{BoundContext, RelaxedCapture};
pub use plans::unsupported_message;
use plans::{bucket, plan_for, PlanKey};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::PyResult;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use topk_dsl::{Dtype, Io, Rows};
use topk_runtime::cuda::cudarc::driver::result as cu;
use topk_runtime::cuda::launch::status;
use topk_runtime::cuda::{CallBuffers, CallShape, Gpu, Plan, RawBuffers};
use topk_runtime::Result;

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
             page beyond the table or a negative page entry (that index was written as -1), or \
             a page_rows entry named no row of the page table (that row was selected as empty)",
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
