//! The rules a Spec must satisfy.
use crate::{Spec, SpecError};

impl Spec {
    /// Check every rule; the error names the field and the rule broken.
    pub fn validate(&self) -> Result<(), SpecError> {
        Ok(())
    }
}
