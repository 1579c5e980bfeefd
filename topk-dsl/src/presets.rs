//! Named Specs reproducing the paper's constants.
use crate::Spec;

/// A named Spec.
#[derive(Clone, Copy, Debug)]
pub struct Preset {
    pub name: &'static str,
    pub about: &'static str,
    pub spec: Spec,
}

/// Every preset, in a stable order.
pub const PRESETS: &[Preset] = &[];

/// Look a preset up by name.
pub fn preset(name: &str) -> Option<Spec> {
    PRESETS.iter().find(|p| p.name == name).map(|p| p.spec)
}
