//! The arguments of each generated entry point, as structs whose fields are the entry's
//! parameters ([`topk_codegen::interface`]): every launch fills one and pushes it whole, and a
//! struct whose fields differ from the description in name, order or kind does not compile.

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaFunction, CudaStream, DeviceRepr, DriverError, LaunchConfig};
use std::sync::Arc;
use topk_codegen::interface::{self, HostArg};

/// A host value that can be pushed for a parameter of the given kind.
pub(crate) trait EntryArg: DeviceRepr {
    const HOST: HostArg;
}

impl EntryArg for i32 {
    const HOST: HostArg = HostArg::I32;
}
impl EntryArg for i64 {
    const HOST: HostArg = HostArg::I64;
}
/// `CUdeviceptr` (a `u64`): a device address.
impl EntryArg for CUdeviceptr {
    const HOST: HostArg = HostArg::DevicePtr;
}

/// Declares the arguments struct of `$entry`, checks at compile time that its fields are
/// the entry's parameters in order (name and kind), and gives it a `launch` that pushes them.
macro_rules! entry_args {
    ($(#[$doc:meta])* $name:ident = $entry:path { $($field:ident: $ty:ty,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug)]
        pub(crate) struct $name {
            $(pub $field: $ty,)*
        }

        const _: () = assert!(
            interface::params_match(
                $entry.params,
                &[$((stringify!($field), <$ty as EntryArg>::HOST)),*]
            ),
            concat!(
                stringify!($name),
                "'s fields are not the parameters of ",
                stringify!($entry),
                " (topk_codegen::interface), in name, order or kind"
            )
        );

        impl $name {
            /// Enqueues `func` (an entry compiled from a source of this interface) on `stream`
            /// with these arguments.
            ///
            /// # Safety
            /// Every device address must be valid for the extents the entry's parameters state
            /// ([`topk_codegen::interface`]), in `stream`'s context, while the kernel runs.
            pub unsafe fn launch(
                &self,
                stream: &Arc<CudaStream>,
                func: &CudaFunction,
                cfg: LaunchConfig,
            ) -> std::result::Result<(), DriverError> {
                use cudarc::driver::PushKernelArg;
                let mut b = stream.launch_builder(func);
                $(b.arg(&self.$field);)*
                // SAFETY: the arguments are the entry's parameters in order and kind (checked
                // above when this was compiled); the caller vouches for the addresses.
                unsafe { b.launch(cfg) }.map(|_| ())
            }
        }
    };
}

entry_args! {
    /// The entry of the single-kernel families ([`interface::SELECTOR`]).
    SelectorArgs = interface::SELECTOR {
        scores: CUdeviceptr,
        pitch: i64,
        lengths: CUdeviceptr,
        live_rows: CUdeviceptr,
        m_cap: i32,
        width: i32,
        out: CUdeviceptr,
        out_pitch: i64,
        spill: CUdeviceptr,
        spill_cap: i32,
        control: CUdeviceptr,
        row_info: CUdeviceptr,
    }
}

entry_args! {
    /// One stage of the stage chain ([`interface::STAGE`]).
    StageArgs = interface::STAGE {
        stage: i32,
        digit: i32,
        scores: CUdeviceptr,
        pitch: i64,
        lengths: CUdeviceptr,
        live_rows: CUdeviceptr,
        m_cap: i32,
        shard_width: i32,
        offset: i32,
        total_width: i32,
        rank: i32,
        ranks: i32,
        chunk_len: i32,
        ws: CUdeviceptr,
        out: CUdeviceptr,
        out_pitch: i64,
        row_info: CUdeviceptr,
    }
}

entry_args! {
    /// The simulated all-reduce's element-wise sum ([`interface::SUM`]).
    SumArgs = interface::SUM {
        dst: CUdeviceptr,
        src: CUdeviceptr,
        n: i64,
    }
}
