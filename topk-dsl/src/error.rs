/// A Spec that is malformed or breaks a rule. Each variant names the field (or fields) and the
/// rule; field names are the keys of the canonical text form (`k`, `map`, `stride`, ...).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// One field breaks a rule on its own.
    #[error("spec field `{field}`: {rule}")]
    Invalid { field: &'static str, rule: String },
    /// Two fields are each valid but cannot be combined.
    #[error("spec fields `{field}` and `{other}`: {rule}")]
    Conflict {
        field: &'static str,
        other: &'static str,
        rule: String,
    },
    /// The text form could not be read; `text` is the offending token.
    #[error("spec text `{text}`: {reason}")]
    Parse { text: String, reason: String },
}

impl SpecError {
    /// The Spec fields this error is about (empty for a parse error).
    pub fn fields(&self) -> Vec<&'static str> {
        match self {
            SpecError::Invalid { field, .. } => vec![*field],
            SpecError::Conflict { field, other, .. } => vec![*field, *other],
            SpecError::Parse { .. } => Vec::new(),
        }
    }

    pub(crate) fn invalid(field: &'static str, rule: impl Into<String>) -> Self {
        SpecError::Invalid {
            field,
            rule: rule.into(),
        }
    }

    pub(crate) fn conflict(
        field: &'static str,
        other: &'static str,
        rule: impl Into<String>,
    ) -> Self {
        SpecError::Conflict {
            field,
            other,
            rule: rule.into(),
        }
    }

    pub(crate) fn parse(text: impl Into<String>, reason: impl Into<String>) -> Self {
        SpecError::Parse {
            text: text.into(),
            reason: reason.into(),
        }
    }
}
