import CHTTPDNSShims

/// The process's C heap (which Swift's allocations come from).
public enum Memory {
    /// Hands freed heap pages of every malloc arena back to the system. glibc keeps them mapped
    /// after a burst (the saved cache's rows read on the store thread, a flood of output
    /// buffers), so resident memory would stay at its peak rather than follow what the daemon
    /// holds.
    public static func returnFreedPages() {
        chttpdns_return_freed_heap_pages()
    }
}
