//! The in-memory cache: values keyed by (device ordinal, cache key), each built at most once
//! at a time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::CacheKey;
use crate::Result;

/// One in-memory slot; its mutex is held while the value is being built, so concurrent callers
/// for the same key wait for that build instead of starting their own.
type Slot<V> = Arc<Mutex<Option<V>>>;

/// In-memory values keyed by (device ordinal, cache key), each built at most once at a time.
#[derive(Debug)]
pub struct MemoryCache<V> {
    slots: Mutex<HashMap<(usize, CacheKey), Slot<V>>>,
}

impl<V> Default for MemoryCache<V> {
    fn default() -> Self {
        MemoryCache {
            slots: Mutex::new(HashMap::new()),
        }
    }
}

impl<V: Clone> MemoryCache<V> {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value for `(ordinal, key)`, built by `init` if absent. Returns `true` when `init` ran
    /// in this call. A failed `init` stores nothing, so the next caller tries again.
    pub fn get_or_try_insert(
        &self,
        ordinal: usize,
        key: CacheKey,
        init: impl FnOnce() -> Result<V>,
    ) -> Result<(V, bool)> {
        let slot = lock(&self.slots).entry((ordinal, key)).or_default().clone();
        let mut value = lock(&slot);
        if let Some(v) = value.as_ref() {
            return Ok((v.clone(), false));
        }
        let built = init()?;
        *value = Some(built.clone());
        Ok((built, true))
    }

    /// Number of values held.
    pub fn len(&self) -> usize {
        let slots: Vec<Slot<V>> = lock(&self.slots).values().cloned().collect();
        slots.iter().filter(|s| lock(s).is_some()).count()
    }

    /// Whether no value is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Locks `m`, recovering from poisoning: a panic while building leaves the slot `None`, which
/// is a consistent state (the next caller builds again).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
