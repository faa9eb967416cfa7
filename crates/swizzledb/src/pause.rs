//! Pause points for the race tests (`race_tests.rs`): a place in the engine where a test can
//! run a hook — to stop the thread that reached it — told where it is by a value of `A`.
//! Outside unit tests a point holds nothing and reaching it does nothing.

#[cfg(test)]
pub(crate) type Hook<A> = std::sync::Arc<dyn Fn(A) + Send + Sync>;

pub(crate) struct Point<A> {
    #[cfg(test)]
    hook: parking_lot::Mutex<Option<Hook<A>>>,
    #[cfg(not(test))]
    at: std::marker::PhantomData<fn(A)>,
}

impl<A> Point<A> {
    pub(crate) const fn new() -> Point<A> {
        Point {
            #[cfg(test)]
            hook: parking_lot::Mutex::new(None),
            #[cfg(not(test))]
            at: std::marker::PhantomData,
        }
    }

    /// Runs the hook, if one is set, without the point's mutex held.
    #[cfg(test)]
    pub(crate) fn reached(&self, at: A) {
        let hook = self.hook.lock().clone();
        if let Some(h) = hook {
            h(at);
        }
    }

    #[cfg(not(test))]
    #[inline(always)]
    pub(crate) fn reached(&self, _: A) {}

    /// Sets the hook (`None`: takes it away).
    #[cfg(test)]
    pub(crate) fn set(&self, hook: Option<Hook<A>>) {
        *self.hook.lock() = hook;
    }
}
