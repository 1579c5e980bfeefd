//! The CUDA generator writes the same FP32 bits as the CPU generator, for every profile, with
//! any launch shape, and for rows generated in pieces. Needs a GPU: run with `--ignored`.

use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use topk_codegen::generator::{generator_source, GENERATOR_ENTRY};
use topk_runtime::cuda::Gpu;
use topk_runtime::data::{generate, Profile};

const K: u32 = 2048;

mod gpu_support;
use gpu_support::gpu;

/// Runs the device generator with one launch shape; returns the `rows x pitch` buffer (columns
/// past the width keep the NaN fill, which the kernel must not touch).
#[allow(clippy::too_many_arguments)]
fn device_generate(
    gpu: &Gpu,
    profile: Profile,
    seed: u64,
    row_offset: i64,
    lengths: &[i32],
    width: usize,
    pitch: usize,
    cfg: LaunchConfig,
) -> Vec<f32> {
    let stream = gpu.stream();
    let kernel = gpu.load(&generator_source(), GENERATOR_ENTRY, 0).unwrap();
    let mut out: CudaSlice<f32> = stream
        .clone_htod(&vec![f32::NAN; lengths.len() * pitch])
        .unwrap();
    let d_lengths = stream.clone_htod(lengths).unwrap();
    let (pitch_i, rows_i, width_i) = (pitch as i64, lengths.len() as i32, width as i32);
    let (code, k) = (profile.code(), K as i32);
    let mut b = stream.launch_builder(&kernel.func);
    b.arg(&mut out)
        .arg(&pitch_i)
        .arg(&rows_i)
        .arg(&width_i)
        .arg(&d_lengths)
        .arg(&seed)
        .arg(&code)
        .arg(&k)
        .arg(&row_offset);
    // SAFETY: the arguments follow the generator's fixed signature and `out` holds rows x pitch.
    unsafe { b.launch(cfg) }.unwrap();
    stream.clone_dtoh(&out).unwrap()
}

fn assert_rows_equal(what: &str, gpu: &[f32], cpu: &[f32], width: usize, pitch: usize) {
    for (r, (g, c)) in gpu.chunks(pitch).zip(cpu.chunks(pitch)).enumerate() {
        for col in 0..width {
            assert_eq!(
                g[col].to_bits(),
                c[col].to_bits(),
                "{what}: row {r} col {col}: gpu {} cpu {}",
                g[col],
                c[col]
            );
        }
        assert!(
            g[width..].iter().all(|x| x.is_nan()),
            "{what}: row {r} padding written"
        );
    }
}

fn shape(grid: (u32, u32, u32), block: (u32, u32, u32)) -> LaunchConfig {
    LaunchConfig {
        grid_dim: grid,
        block_dim: block,
        shared_mem_bytes: 0,
    }
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn device_and_host_generators_agree_bit_for_bit() {
    let gpu = gpu();
    let width = 9000;
    let pitch = width + 5;
    let lengths: Vec<i32> = (0..24)
        .map(|r| [0, 1, 2047, 2048, 2049, 9000, -4, 9100, 5000, 7777][r % 10])
        .collect();
    let shapes = [
        shape((1, 1, 1), (32, 1, 1)),
        shape((7, 3, 1), (64, 2, 1)),
        shape((gpu.props().sms * 4, 1, 1), (256, 1, 1)),
    ];
    for profile in Profile::ALL {
        let cpu = generate(profile, 99, K, 1000, &lengths, width, pitch).unwrap();
        for (i, &cfg) in shapes.iter().enumerate() {
            let dev = device_generate(&gpu, profile, 99, 1000, &lengths, width, pitch, cfg);
            assert_rows_equal(&format!("{profile} shape {i}"), &dev, &cpu, width, pitch);
        }
        // The second half of the rows, generated alone at its own row offset.
        let dev = device_generate(
            &gpu,
            profile,
            99,
            1012,
            &lengths[12..],
            width,
            pitch,
            shapes[2],
        );
        assert_rows_equal(
            &format!("{profile} piece"),
            &dev,
            &cpu[12 * pitch..],
            width,
            pitch,
        );
    }
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn device_and_host_agree_on_wide_rows_and_large_seeds() {
    let gpu = gpu();
    // Columns beyond 2^24 convert to float with rounding on both sides; seeds and row offsets
    // beyond 2^32 exercise the high words of the hash.
    let width = (1 << 24) + 4096;
    let lengths = [width as i32, width as i32 - 1];
    let seed = 0xdead_beef_0000_0001;
    let offset = 3 << 32;
    for profile in [
        Profile::Indexer,
        Profile::SortedAsc,
        Profile::SortedDesc,
        Profile::Iid,
    ] {
        let cpu = generate(profile, seed, K, offset as u64, &lengths, width, width).unwrap();
        let cfg = shape((gpu.props().sms * 8, 2, 1), (256, 1, 1));
        let dev = device_generate(&gpu, profile, seed, offset, &lengths, width, width, cfg);
        assert_rows_equal(&format!("{profile} wide"), &dev, &cpu, width, width);
    }
}
