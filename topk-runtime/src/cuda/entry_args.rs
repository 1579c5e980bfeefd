//! The arguments of each generated entry point, as structs whose fields are the entry's
//! parameters ([`topk_codegen::interface`]): every launch fills them and pushes them whole, and a
//! struct whose fields differ from the description in name, order or kind does not compile.
//!
//! An entry's list depends on the spec's call interface ([`interface::Entry::params`]), so it is
//! pushed in groups, each checked against its part of the description: the head, the row
//! source, the tail, then the transform's and the values' parameters ([`CallArgs`]).

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaFunction, CudaStream, DeviceRepr, DriverError, LaunchArgs, LaunchConfig};
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

/// Declares the arguments struct of one group of parameters (`$params`), checks at compile time
/// that its fields are those parameters in order (name and kind), and gives it `push`, which
/// appends them to a launch, and `PUSHED`, their names and kinds.
macro_rules! arg_group {
    ($(#[$doc:meta])* $name:ident = $params:expr => { $($field:ident: $ty:ty,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug)]
        pub(crate) struct $name {
            $(pub $field: $ty,)*
        }

        const _: () = assert!(
            interface::params_match($params, $name::PUSHED),
            concat!(
                stringify!($name),
                "'s fields are not the parameters of ",
                stringify!($params),
                " (topk_codegen::interface), in name, order or kind"
            )
        );

        impl $name {
            /// Names and kinds of the fields, in order.
            pub const PUSHED: &'static [(&'static str, HostArg)] =
                &[$((stringify!($field), <$ty as EntryArg>::HOST)),*];

            /// Appends the fields to `b`, in order.
            pub fn push<'a>(&'a self, b: &mut LaunchArgs<'a>) {
                use cudarc::driver::PushKernelArg;
                $(b.arg(&self.$field);)*
            }
        }
    };
}

arg_group! {
    /// The selector entry's parameters before its row source ([`interface::SELECTOR`]).
    SelectorHead = interface::SELECTOR.head => {
        scores: CUdeviceptr,
        pitch: i64,
    }
}

arg_group! {
    /// The selector entry's parameters after its row source.
    SelectorTail = interface::SELECTOR.tail => {
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

arg_group! {
    /// The stage entry's parameters before its row source ([`interface::STAGE`]).
    StageHead = interface::STAGE.head => {
        stage: i32,
        digit: i32,
        scores: CUdeviceptr,
        pitch: i64,
    }
}

arg_group! {
    /// The stage entry's parameters after its row source.
    StageTail = interface::STAGE.tail => {
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

arg_group! {
    /// The plain row source ([`interface::LENGTHS`]).
    LengthsArgs = interface::LENGTHS => {
        lengths: CUdeviceptr,
    }
}

arg_group! {
    /// Row windows ([`interface::WINDOW`]).
    WindowArgs = interface::WINDOW => {
        starts: CUdeviceptr,
        ends: CUdeviceptr,
    }
}

arg_group! {
    /// Speculative-decode rows ([`interface::DECODE`]).
    DecodeArgs = interface::DECODE => {
        seq_lens: CUdeviceptr,
        next_n: i32,
    }
}

arg_group! {
    /// Per-row index offsets ([`interface::OFFSET`]).
    OffsetArgs = interface::OFFSET => {
        offsets: CUdeviceptr,
    }
}

arg_group! {
    /// A page table ([`interface::PAGED`]).
    PagedArgs = interface::PAGED => {
        page_table: CUdeviceptr,
        page_columns: i32,
        page_pitch: i64,
        page_size: i32,
    }
}

arg_group! {
    /// A page table read through a row map ([`interface::PAGED_ROWS`]).
    PagedRowsArgs = interface::PAGED_ROWS => {
        page_table: CUdeviceptr,
        page_columns: i32,
        page_pitch: i64,
        page_size: i32,
        page_rows: CUdeviceptr,
        page_table_rows: i32,
    }
}

arg_group! {
    /// The values output ([`interface::VALUES`]).
    ValuesArgs = interface::VALUES => {
        values: CUdeviceptr,
    }
}

arg_group! {
    /// Each row's prior boundary ([`interface::PRIOR`]).
    PriorArgs = interface::PRIOR => {
        prior: CUdeviceptr,
    }
}

arg_group! {
    /// Each row's K-th largest score, written ([`interface::BOUNDARY`]).
    BoundaryArgs = interface::BOUNDARY => {
        boundary: CUdeviceptr,
    }
}

arg_group! {
    /// The simulated all-reduce's element-wise sum ([`interface::SUM`]).
    SumArgs = interface::SUM.head => {
        dst: CUdeviceptr,
        src: CUdeviceptr,
        n: i64,
    }
}

const _: () = assert!(interface::SUM.tail.is_empty() && !interface::SUM.call);

/// The row source's arguments, one kind per `Rows` of the spec.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RowArgs {
    Lengths(LengthsArgs),
    Window(WindowArgs),
    Decode(DecodeArgs),
}

/// The index transform's arguments, one kind per `Transform` of the spec.
#[derive(Clone, Copy, Debug)]
pub(crate) enum TransformArgs {
    None,
    Offset(OffsetArgs),
    Paged(PagedArgs),
    PagedRows(PagedRowsArgs),
}

/// The call interface's arguments of one launch: the groups [`interface::Entry::params`] puts
/// around an entry's plain parameters.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CallArgs {
    pub rows: RowArgs,
    pub transform: TransformArgs,
    pub values: Option<ValuesArgs>,
    pub prior: Option<PriorArgs>,
    pub boundary: Option<BoundaryArgs>,
}

impl CallArgs {
    /// The plain operator's: lengths, no transform, no values.
    pub fn lengths(lengths: CUdeviceptr) -> CallArgs {
        CallArgs {
            rows: RowArgs::Lengths(LengthsArgs { lengths }),
            transform: TransformArgs::None,
            values: None,
            prior: None,
            boundary: None,
        }
    }

    fn push_rows<'a>(&'a self, b: &mut LaunchArgs<'a>) {
        match &self.rows {
            RowArgs::Lengths(a) => a.push(b),
            RowArgs::Window(a) => a.push(b),
            RowArgs::Decode(a) => a.push(b),
        }
    }

    fn push_outputs<'a>(&'a self, b: &mut LaunchArgs<'a>) {
        match &self.transform {
            TransformArgs::None => {}
            TransformArgs::Offset(a) => a.push(b),
            TransformArgs::Paged(a) => a.push(b),
            TransformArgs::PagedRows(a) => a.push(b),
        }
        if let Some(v) = &self.values {
            v.push(b);
        }
        if let Some(p) = &self.prior {
            p.push(b);
        }
        if let Some(o) = &self.boundary {
            o.push(b);
        }
    }

    #[cfg(test)]
    /// Names and kinds of an entry's arguments with these groups around `head` and `tail`, in
    /// the order they are pushed.
    pub fn pushed(
        &self,
        head: &[(&'static str, HostArg)],
        tail: &[(&'static str, HostArg)],
    ) -> Vec<(&'static str, HostArg)> {
        let mut list = head.to_vec();
        list.extend_from_slice(match &self.rows {
            RowArgs::Lengths(_) => LengthsArgs::PUSHED,
            RowArgs::Window(_) => WindowArgs::PUSHED,
            RowArgs::Decode(_) => DecodeArgs::PUSHED,
        });
        list.extend_from_slice(tail);
        list.extend_from_slice(match &self.transform {
            TransformArgs::None => &[],
            TransformArgs::Offset(_) => OffsetArgs::PUSHED,
            TransformArgs::Paged(_) => PagedArgs::PUSHED,
            TransformArgs::PagedRows(_) => PagedRowsArgs::PUSHED,
        });
        if self.values.is_some() {
            list.extend_from_slice(ValuesArgs::PUSHED);
        }
        if self.prior.is_some() {
            list.extend_from_slice(PriorArgs::PUSHED);
        }
        if self.boundary.is_some() {
            list.extend_from_slice(BoundaryArgs::PUSHED);
        }
        list
    }
}

/// The selector entry's arguments ([`interface::SELECTOR`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SelectorArgs {
    pub head: SelectorHead,
    pub call: CallArgs,
    pub tail: SelectorTail,
}

/// One stage's arguments ([`interface::STAGE`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct StageArgs {
    pub head: StageHead,
    pub call: CallArgs,
    pub tail: StageTail,
}

macro_rules! launch_with_call {
    ($name:ident) => {
        impl $name {
            /// Enqueues `func` (an entry compiled from a source of this interface, for a spec
            /// whose call interface is the one these arguments carry) on `stream`.
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
                let mut b = stream.launch_builder(func);
                self.head.push(&mut b);
                self.call.push_rows(&mut b);
                self.tail.push(&mut b);
                self.call.push_outputs(&mut b);
                // SAFETY: the groups are the entry's parameters in order and kind (each checked
                // when this was compiled, their order by `pushed_in_the_described_order`); the
                // caller vouches for the addresses.
                unsafe { b.launch(cfg) }.map(|_| ())
            }
        }
    };
}

launch_with_call!(SelectorArgs);
launch_with_call!(StageArgs);

impl SumArgs {
    /// Enqueues the sum `func` on `stream`.
    ///
    /// # Safety
    /// `dst` and `src` must hold `n` words each in `stream`'s context while the kernel runs.
    pub unsafe fn launch(
        &self,
        stream: &Arc<CudaStream>,
        func: &CudaFunction,
        cfg: LaunchConfig,
    ) -> std::result::Result<(), DriverError> {
        let mut b = stream.launch_builder(func);
        self.push(&mut b);
        // SAFETY: the fields are the entry's parameters (checked when this was compiled); the
        // caller vouches for the addresses.
        unsafe { b.launch(cfg) }.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use topk_dsl::{Io, Prior, Rows, Transform};

    fn call_args(io: &Io) -> CallArgs {
        CallArgs {
            rows: match io.rows {
                Rows::Lengths => RowArgs::Lengths(LengthsArgs { lengths: 0 }),
                Rows::Window { .. } => RowArgs::Window(WindowArgs { starts: 0, ends: 0 }),
                Rows::Decode => RowArgs::Decode(DecodeArgs {
                    seq_lens: 0,
                    next_n: 1,
                }),
            },
            transform: match io.transform {
                Transform::None => TransformArgs::None,
                Transform::Offset => TransformArgs::Offset(OffsetArgs { offsets: 0 }),
                Transform::Paged => TransformArgs::Paged(PagedArgs {
                    page_table: 0,
                    page_columns: 0,
                    page_pitch: 0,
                    page_size: 1,
                }),
                Transform::PagedRows => TransformArgs::PagedRows(PagedRowsArgs {
                    page_table: 0,
                    page_columns: 0,
                    page_pitch: 0,
                    page_size: 1,
                    page_rows: 0,
                    page_table_rows: 0,
                }),
            },
            values: io.values.then_some(ValuesArgs { values: 0 }),
            prior: (io.prior != Prior::None).then_some(PriorArgs { prior: 0 }),
            boundary: io.boundary.then_some(BoundaryArgs { boundary: 0 }),
        }
    }

    #[test]
    fn pushed_in_the_described_order() {
        for rows in [Rows::Lengths, Rows::Window { relative: true }, Rows::Decode] {
            for transform in [
                Transform::None,
                Transform::Offset,
                Transform::Paged,
                Transform::PagedRows,
            ] {
                for (values, prior) in [
                    (false, Prior::None),
                    (true, Prior::None),
                    (
                        false,
                        Prior::Bins {
                            primary: 2,
                            rescue: 8,
                        },
                    ),
                ] {
                    for boundary in [false, true] {
                        let io = Io {
                            rows,
                            transform,
                            values,
                            prior,
                            boundary,
                            ..Io::DEFAULT
                        };
                        let call = call_args(&io);
                        for (entry, head, tail) in [
                            (
                                interface::SELECTOR,
                                SelectorHead::PUSHED,
                                SelectorTail::PUSHED,
                            ),
                            (interface::STAGE, StageHead::PUSHED, StageTail::PUSHED),
                        ] {
                            let pushed = call.pushed(head, tail);
                            assert!(
                                interface::params_match(&entry.params(&io), &pushed),
                                "{io:?}: {pushed:?}"
                            );
                        }
                    }
                }
            }
        }
    }
}
