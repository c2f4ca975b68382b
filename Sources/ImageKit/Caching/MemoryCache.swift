/// A cache of decoded images in memory (SDWebImage's `SDMemoryCache` protocol).
public protocol ImageMemoryCaching: Sendable {
    /// The image stored under `key`, marking it most recently used.
    func image(forKey key: String) -> DecodedImage?
    /// Stores `image` with its ``DecodedImage/cost``; it may be refused if it is too large.
    func setImage(_ image: DecodedImage, forKey key: String)
    /// Removes the image for `key`, if any.
    func removeImage(forKey key: String)
    /// Removes every image.
    func removeAll()
    /// Evicts least recently used images until the total cost is at most `cost`.
    func trim(toCost cost: Int)
    /// The sum of the entries' costs, in bytes.
    var totalCost: Int { get }
    /// The number of entries.
    var count: Int { get }
}

/// A strict LRU cache of decoded images, limited by total cost and by count.
///
/// Unlike `NSCache`, the limits are hard: after every insertion the total cost and the count are
/// within them. Cost is ``DecodedImage/cost`` (bytes per row × height × frames). An image whose
/// cost exceeds ``Configuration/maxEntryCostFraction`` of the cost limit is not stored, so one
/// huge image cannot flush everything else.
///
/// Hits are synchronous: one lock, one dictionary lookup, no allocation beyond the result.
///
/// ```swift
/// let cache = MemoryCache(configuration: .init(costLimit: 256 << 20))
/// cache.setImage(image, forKey: "https://example.com/a.jpg")
/// let hit = cache.image(forKey: "https://example.com/a.jpg")
/// ```
public final class MemoryCache: ImageMemoryCaching {
    /// The memory cache's limits.
    public struct Configuration: Sendable, Hashable {
        /// Total cost limit in bytes; 0 = unlimited.
        public var costLimit: Int
        /// Entry count limit; 0 = unlimited.
        public var countLimit: Int
        /// Entries costing more than this fraction of ``costLimit`` are not stored (default 10 %).
        public var maxEntryCostFraction: Double
        // Spec: MEM-04.
        /// Keep weak references to evicted images and hand them back while someone else still
        /// holds them (SDWebImage's weak memory cache). Off by default.
        public var usesWeakCache: Bool

        /// Limits; the cost limit defaults to a share of the machine's memory (`MemoryLimits`).
        public init(
            costLimit: Int = MemoryLimits.defaultCacheCostLimit, countLimit: Int = 0,
            maxEntryCostFraction: Double = 0.1, usesWeakCache: Bool = false
        ) {
            self.costLimit = costLimit
            self.countLimit = countLimit
            self.maxEntryCostFraction = maxEntryCostFraction
            self.usesWeakCache = usesWeakCache
        }
    }

    /// The limits the cache was made with.
    public let configuration: Configuration
    private let state: Locked<LRUState>
    /// Evictions and the total cost are reported here (nil: nothing is reported).
    let metrics: ImageKitMetrics?

    /// - Parameters:
    ///   - telemetry: where evictions (`imagekit_memory_cache_evictions_total`) and the
    ///   - configuration: the cost and count limits.
    ///   total cost (`imagekit_memory_cache_cost_bytes`) are reported; nil reports nothing.
    public init(configuration: Configuration = Configuration(), telemetry: ImageKitTelemetry? = nil) {
        self.configuration = configuration
        self.state = Locked(LRUState())
        self.metrics = telemetry.map { ImageKitMetrics(factory: $0.metricsFactory) }
    }

    /// Images evicted for the limits (or by ``trim(toCost:)``) since the cache was made.
    public var evictionCount: Int { state.withLock { $0.evictions } }

    private func report(evicted: Int, totalCost: Int) {
        guard let metrics else { return }
        if evicted > 0 { metrics.evictions.increment(by: Int64(evicted)) }
        metrics.memoryCost.record(totalCost)
    }

    public func image(forKey key: String) -> DecodedImage? {
        state.withLock { state in
            if let index = state.index[key] {
                state.moveToFront(index)
                return state.slots[index].image
            }
            guard configuration.usesWeakCache else { return nil }
            guard let revived = state.weak[key]?.revive() else {
                state.weak[key] = nil
                return nil
            }
            // Still alive elsewhere: back into the LRU with its cost (SDWebImage's "sync").
            state.insert(revived, forKey: key, configuration: configuration)
            return revived
        }
    }

    public func setImage(_ image: DecodedImage, forKey key: String) {
        let (evicted, cost) = state.withLock { state -> (Int, Int) in
            if configuration.usesWeakCache { state.rememberWeakly(image, forKey: key) }
            let before = state.evictions
            state.insert(image, forKey: key, configuration: configuration)
            return (state.evictions - before, state.totalCost)
        }
        report(evicted: evicted, totalCost: cost)
    }

    public func removeImage(forKey key: String) {
        state.withLock { state in
            state.weak[key] = nil
            if let index = state.index[key] { state.remove(index) }
        }
    }

    public func removeAll() {
        // The removed images are released after the lock is dropped, so bitmap deinit (a free of
        // up to hundreds of MB) never runs under it.
        let removed: [LRUState.Slot] = state.withLock { state in
            let slots = state.slots
            let weak = state.weak
            state = LRUState()
            if configuration.usesWeakCache { state.weak = weak }
            return slots
        }
        _ = removed
    }

    /// Evicts least recently used images until the total cost is at most `cost`; the lazy
    /// animations that stay drop what they can rebuild (``AnimatedImage/trim()``: seek
    /// checkpoints and their players' kept frames), and the idle memory kept for reuse is returned
    /// to the system: pixel memory's spares (``PixelMemory/releaseSpares()``) and the JPEG
    /// encoder's pooled output buffers.
    public func trim(toCost cost: Int) {
        let (animations, evicted, remaining) = state.withLock { state -> ([AnimatedImage], Int, Int) in
            var evicted = 0
            while state.totalCost > max(cost, 0), let last = state.tail {
                state.remove(last)
                evicted += 1
            }
            state.evictions += evicted
            return (state.index.values.compactMap { state.slots[$0].image?.animation }, evicted, state.totalCost)
        }
        report(evicted: evicted, totalCost: remaining)
        for animation in animations { animation.trim() }
        PixelMemory.releaseSpares()
        TurboJPEGCompressor.releasePooled()
    }

    public var totalCost: Int { state.withLock { $0.totalCost } }
    public var count: Int { state.withLock { $0.index.count } }

    /// Keys from most to least recently used (for tests and diagnostics).
    public var keysByRecency: [String] {
        state.withLock { state in
            var keys: [String] = []
            var cursor = state.head
            while let index = cursor {
                keys.append(state.slots[index].key)
                cursor = state.slots[index].next
            }
            return keys
        }
    }
}

/// The LRU list, kept in an array of slots linked by index so that hits and moves allocate
/// nothing.
struct LRUState {
    struct Slot {
        var key: String
        var image: DecodedImage?
        var cost: Int
        var previous: Int?
        var next: Int?
    }

    var slots: [Slot] = []
    var free: [Int] = []
    var index: [String: Int] = [:]
    var head: Int?
    var tail: Int?
    var totalCost = 0
    /// Images removed for the limits so far.
    var evictions = 0
    var weak: [String: WeakImage] = [:]
    var insertionsSinceWeakPrune = 0

    mutating func insert(_ image: DecodedImage, forKey key: String, configuration: MemoryCache.Configuration) {
        let cost = image.cost
        if let existing = index[key] { remove(existing) }
        if configuration.costLimit > 0
            && Double(cost) > Double(configuration.costLimit) * configuration.maxEntryCostFraction
        {
            return
        }
        let slot = Slot(key: key, image: image, cost: cost, previous: nil, next: head)
        let position: Int
        if let reused = free.popLast() {
            slots[reused] = slot
            position = reused
        } else {
            slots.append(slot)
            position = slots.count - 1
        }
        if let head { slots[head].previous = position }
        head = position
        if tail == nil { tail = position }
        index[key] = position
        totalCost += cost
        while let last = tail, last != position,
            (configuration.costLimit > 0 && totalCost > configuration.costLimit)
                || (configuration.countLimit > 0 && index.count > configuration.countLimit)
        {
            remove(last)
            evictions += 1
        }
    }

    mutating func moveToFront(_ position: Int) {
        guard head != position else { return }
        unlink(position)
        slots[position].previous = nil
        slots[position].next = head
        if let head { slots[head].previous = position }
        head = position
        if tail == nil { tail = position }
    }

    mutating func remove(_ position: Int) {
        unlink(position)
        index[slots[position].key] = nil
        totalCost -= slots[position].cost
        slots[position].image = nil
        slots[position].key = ""
        free.append(position)
    }

    private mutating func unlink(_ position: Int) {
        let previous = slots[position].previous, next = slots[position].next
        if let previous { slots[previous].next = next } else { head = next }
        if let next { slots[next].previous = previous } else { tail = previous }
        slots[position].previous = nil
        slots[position].next = nil
    }

    mutating func rememberWeakly(_ image: DecodedImage, forKey key: String) {
        weak[key] = WeakImage(image)
        insertionsSinceWeakPrune += 1
        // Drop entries whose images died, now and then, so the table does not grow forever.
        if insertionsSinceWeakPrune >= 256 {
            insertionsSinceWeakPrune = 0
            weak = weak.filter { $0.value.isAlive }
        }
    }
}

/// An image held by weak references to its bitmaps: it can be revived while every frame's
/// bitmap is still referenced somewhere else.
struct WeakImage {
    // @unchecked Sendable: `bitmap` is assigned once in init; afterwards only the runtime's
    // atomic weak-reference zeroing changes it.
    final class Reference: @unchecked Sendable {
        weak var bitmap: Bitmap?
        init(_ bitmap: Bitmap) { self.bitmap = bitmap }
    }

    var template: DecodedImage
    var references: [Reference]
    var durations: [Double]
    /// A lazy image's decoder, held as weakly as its pixels.
    weak var animation: AnimatedImage?
    let isLazy: Bool

    init(_ image: DecodedImage) {
        references = image.frames.map { Reference($0.bitmap) }
        durations = image.frames.map(\.duration)
        animation = image.animation
        isLazy = image.isLazy
        // The template keeps everything but the pixels: frames are rebuilt from the references.
        template = image
        template.frames = []
        template.animation = nil
    }

    var isAlive: Bool { references.allSatisfy { $0.bitmap != nil } && (!isLazy || animation != nil) }

    func revive() -> DecodedImage? {
        if isLazy && animation == nil { return nil }
        var frames: [ImageFrame] = []
        frames.reserveCapacity(references.count)
        for (reference, duration) in zip(references, durations) {
            guard let bitmap = reference.bitmap else { return nil }
            frames.append(ImageFrame(bitmap: bitmap, duration: duration))
        }
        var image = template
        image.frames = frames
        image.animation = animation
        return image
    }
}
