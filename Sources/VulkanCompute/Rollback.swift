/// What a failing initializer must undo: each created handle registers its
/// destroy call, and unless `keep()` is reached, `run()` (from a `defer`)
/// destroys them in reverse order. One mechanism instead of a cleanup list
/// repeated, and sometimes incomplete, at every `throw`.
struct Rollback {
    private var actions: [() -> Void] = []

    /// Registers the undo of something just created.
    mutating func add(_ undo: @escaping () -> Void) { actions.append(undo) }

    /// Everything succeeded: nothing is undone.
    mutating func keep() { actions.removeAll() }

    /// Undoes, newest first, what was not kept.
    func run() { actions.reversed().forEach { $0() } }
}
