import CFuzzDriver
import Foundation

/// The target the C callback runs; set once by ``runFuzzer(_:)`` before libFuzzer starts.
nonisolated(unsafe) private var target: ((inout FuzzInput) -> Void)?

/// Runs libFuzzer with `body` as the target and returns its exit status. Each executable's
/// main calls this (SwiftPM gives executables a main of their own, so libFuzzer's is not used).
public func runFuzzer(_ body: @escaping (inout FuzzInput) -> Void) -> Int32 {
    target = body
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    return LLVMFuzzerRunDriver(&argc, &argv) { data, size in
        var input = FuzzInput(data.map(UnsafeRawPointer.init), size)
        target?(&input)
        return 0
    }
}
