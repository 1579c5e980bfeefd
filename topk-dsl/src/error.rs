/// A Spec that is malformed or breaks a rule. Each variant names the field and the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("spec field `{field}`: {rule}")]
    Invalid { field: &'static str, rule: String },
    #[error("spec text `{text}`: {reason}")]
    Parse { text: String, reason: String },
}
