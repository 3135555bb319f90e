import HTTPDNSProtocol
import Testing

/// The buffer every response is written into: growth, the bytes kept, and what sending removes.
struct JSONOutputTests {
    /// A reference for every byte the buffer should hold.
    private static func pattern(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31) } }

    @Test(arguments: [1, 15, 16, 17, 255, 256, 257, 10_000])
    func growingKeepsEveryByteInOrder(_ count: Int) {
        let expected = Self.pattern(count)
        var out = JSONOutput(capacity: 16)
        for (i, byte) in expected.enumerated() {
            // Bytes one at a time and in runs of up to 7, so growth happens under both.
            if i % 2 == 0 {
                out.append(byte)
            } else {
                [byte].withUnsafeBytes { out.append($0) }
            }
        }
        #expect(out.count == count)
        #expect(out.capacity >= count)
        #expect(out.bytes == expected)
    }

    @Test func aRunLargerThanDoubleTheCapacityFitsInOneGrowth() {
        var out = JSONOutput(capacity: 16)
        let run = Self.pattern(1_000)
        out.append(contentsOf: run)
        out.append(contentsOf: run)
        #expect(out.bytes == run + run)
    }

    @Test func emptyRunsChangeNothing() {
        var out = JSONOutput()
        out.append(UnsafeRawBufferPointer(start: nil, count: 0))
        out.append(contentsOf: [])
        #expect(out.count == 0)
        #expect(out.bytes == [])
    }

    @Test func removeFirstKeepsTheRestAtTheFront() {
        var out = JSONOutput(capacity: 16)
        let all = Self.pattern(100)
        out.append(contentsOf: all)
        out.removeFirst(37)
        #expect(out.bytes == Array(all[37...]))
        out.append(7)
        #expect(out.bytes == Array(all[37...]) + [7])
        out.removeFirst(out.count)
        #expect(out.count == 0)
    }

    @Test func removeAllGivesALargeBufferBackUnlessAskedToKeepIt() {
        var out = JSONOutput()
        out.append(contentsOf: Self.pattern(100_000))
        out.removeAll(keepingCapacity: true)
        #expect(out.count == 0)
        #expect(out.capacity >= 100_000)
        out.append(contentsOf: Self.pattern(100_000))
        out.removeAll()
        #expect(out.count == 0)
        #expect(out.capacity == JSONOutput.initialCapacity)
        out.append(contentsOf: [1, 2, 3])
        #expect(out.bytes == [1, 2, 3])
    }

    @Test func writersAppendAfterWhatIsThere() {
        var out = JSONOutput()
        out.append(contentsOf: Array("[".utf8))
        JSONWriter.string("a\"b\n", to: &out)
        out.append(UInt8(ascii: ","))
        JSONWriter.integer(Int64.min, to: &out)
        out.append(UInt8(ascii: "]"))
        #expect(String(decoding: out.bytes, as: UTF8.self) == #"["a\"b\n",-9223372036854775808]"#)
    }
}
