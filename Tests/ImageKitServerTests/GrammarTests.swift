import Foundation
import XCTest

@testable import ImageKitServer

/// Both URL grammars, parse → canonical operations, table-driven, and back.
final class GrammarTests: XCTestCase {
    func key(_ path: String, presets: [String: [String]] = [:], file: StaticString = #filePath, line: UInt = #line)
        -> String?
    {
        do {
            // imgproxy's dialect rules lead its keys; testDialectRulesAreInTheKey checks them.
            let key = try ImageRequest.parse(path: path, presets: presets).operations.canonicalKey
            let rules = "rules:imgproxy"
            return key.hasPrefix(rules + ";") ? String(key.dropFirst(rules.count + 1)) : key == rules ? "" : key
        } catch {
            XCTFail("\(path): \(error)", file: file, line: line)
            return nil
        }
    }

    func status(_ path: String, presets: [String: [String]] = [:]) -> (Int, String)? {
        do {
            _ = try ImageRequest.parse(path: path, presets: presets)
            return nil
        } catch {
            return (error.status, error.code.rawValue)
        }
    }

    /// Each path parses, renders with `render`, and parses back to the same operations and source.
    func assertRoundTrips(
        _ paths: [String], render: (ImageRequest) -> String, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        for path in paths {
            let first = try ImageRequest.parse(path: path)
            let rendered = render(first)
            let second = try ImageRequest.parse(path: rendered)
            XCTAssertEqual(second.operations, first.operations, "\(path) → \(rendered)", file: file, line: line)
            XCTAssertEqual(second.source, first.source, rendered, file: file, line: line)
        }
    }

    // MARK: thumbor

    /// The forms of thumbor's URL documentation and its integration-test URL matrix.
    func testThumborForms() {
        let table: [(String, String)] = [
            ("/unsafe/example.com/a.jpg", "rs:fill;el:1"),
            ("/unsafe/300x200/example.com/a.jpg", "rs:fill;w:300;h:200;el:1"),
            ("/unsafe/300x0/example.com/a.jpg", "rs:fill;w:300;el:1"),
            ("/unsafe/0x0/example.com/a.jpg", "rs:fill;el:1"),
            ("/unsafe/x/example.com/a.jpg", "rs:fill;el:1"),
            ("/unsafe/-300x200/example.com/a.jpg", "rs:fill;w:300;h:200;el:1;flh:1"),
            ("/unsafe/300x-200/example.com/a.jpg", "rs:fill;w:300;h:200;el:1;flv:1"),
            ("/unsafe/-300x-200/example.com/a.jpg", "rs:fill;w:300;h:200;el:1;flh:1;flv:1"),
            ("/unsafe/origx200/example.com/a.jpg", "rs:fill;w:orig;h:200;el:1"),
            ("/unsafe/-origx-orig/example.com/a.jpg", "rs:fill;w:orig;h:orig;el:1;flh:1;flv:1"),
            ("/unsafe/fit-in/300x200/example.com/a.jpg", "rs:fit;w:300;h:200"),
            ("/unsafe/adaptive-fit-in/300x200/example.com/a.jpg", "rs:fit;w:300;h:200;adaptive:1"),
            ("/unsafe/full-fit-in/300x200/example.com/a.jpg", "rs:cover;w:300;h:200;el:1"),
            ("/unsafe/adaptive-full-fit-in/300x200/example.com/a.jpg", "rs:cover;w:300;h:200;adaptive:1;el:1"),
            ("/unsafe/10x20:110x220/example.com/a.jpg", "crop:10,20,110,220;rs:fill;el:1"),
            ("/unsafe/10x20:110x220/50x50/example.com/a.jpg", "crop:10,20,110,220;rs:fill;w:50;h:50;el:1"),
            ("/unsafe/trim/example.com/a.jpg", "trim:top-left,0;rs:fill;el:1"),
            ("/unsafe/trim:bottom-right/example.com/a.jpg", "trim:bottom-right,0;rs:fill;el:1"),
            ("/unsafe/trim:top-left:10/example.com/a.jpg", "trim:top-left,10;rs:fill;el:1"),
            ("/unsafe/trim:50/example.com/a.jpg", "trim:bottom-right,0;rs:fill;el:1"),  // thumbor's reading of it
            ("/unsafe/300x200/left/top/example.com/a.jpg", "rs:fill;w:300;h:200;el:1;g:nowe"),
            ("/unsafe/300x200/right/example.com/a.jpg", "rs:fill;w:300;h:200;el:1;g:ea"),
            ("/unsafe/300x200/bottom/example.com/a.jpg", "rs:fill;w:300;h:200;el:1;g:so"),
            ("/unsafe/300x200/center/middle/example.com/a.jpg", "rs:fill;w:300;h:200;el:1"),
            ("/unsafe/300x200/smart/example.com/a.jpg", "rs:fill;w:300;h:200;el:1;g:sm"),
            ("/unsafe/meta/300x200/example.com/a.jpg", "meta:1;rs:fill;w:300;h:200;el:1"),
            (
                "/unsafe/fit-in/300x200/filters:quality(70):format(webp)/example.com/a.jpg",
                "rs:fit;w:300;h:200;fmt:webp;q:70"
            ),
            ("/unsafe/fit-in/300x200/filters:upscale()/example.com/a.jpg", "rs:fit;w:300;h:200;el:1"),
            ("/unsafe/300x200/filters:no_upscale()/example.com/a.jpg", "rs:fill;w:300;h:200"),
            ("/unsafe/300x200/filters:stretch()/example.com/a.jpg", "rs:force;w:300;h:200;el:1"),
            ("/unsafe/fit-in/300x200/filters:fill(ff0000)/example.com/a.jpg", "rs:fit;w:300;h:200;ex:1;fill:ff0000"),
            (
                "/unsafe/fit-in/300x200/filters:fill(transparent)/example.com/a.png",
                "rs:fit;w:300;h:200;ex:1;fill:00000000"
            ),
            ("/unsafe/fit-in/300x200/filters:fill(blur)/example.com/a.jpg", "rs:fit;w:300;h:200;ex:1;fill:blur"),
            (
                "/unsafe/filters:blur(5):grayscale():rotate(90)/example.com/a.jpg",
                "rs:fill;el:1;rot:270;f:blur(5);f:grayscale()"
            ),
            ("/unsafe/filters:blur(5,2)/example.com/a.jpg", "rs:fill;el:1;f:blur(5,2)"),
            (
                "/unsafe/filters:round_corner(20|40,255,255,255,true)/example.com/a.png",
                "rs:fill;el:1;f:round_corner(20,40,ffffff,1)"
            ),
            (
                "/unsafe/filters:brightness(10):contrast(-20):saturation(1.5):rgb(10,-10,0)/example.com/a.jpg",
                "rs:fill;el:1;f:brightness(10);f:contrast(-20);f:saturation(1.5);f:rgb(10,-10,0)"
            ),
            (
                "/unsafe/filters:sharpen(2,1.0,true):noise(10)/example.com/a.jpg",
                "rs:fill;el:1;f:sharpen(2,1,1);f:noise(10)"
            ),
            (
                "/unsafe/filters:strip_exif():strip_icc():max_bytes(40000):max_age(60)/example.com/a.jpg",
                "rs:fill;el:1;mb:40000;scp:1;maxage:60"
            ),
            (
                "/unsafe/300x200/filters:focal(10x20:30x40)/example.com/a.jpg",
                "rs:fill;w:300;h:200;el:1;g:fr,10,20,30,40"
            ),
            (
                "/unsafe/filters:proportion(0.5):background_color(white)/example.com/a.jpg",
                "rs:fill;el:1;bg:ffffff;prop:0.5"
            ),
            (
                "/unsafe/filters:watermark(example.com/wm.png,-10,-10,50)/example.com/a.jpg",
                "rs:fill;el:1;f:watermark(example.com/wm.png,-10,-10,50,-,-)"
            ),
            (
                "/unsafe/filters:watermark(https://example.com/wm.png,center,repeat,30,20,none)/example.com/a.jpg",
                "rs:fill;el:1;f:watermark(https://example.com/wm.png,center,repeat,30,20,-)"
            ),
        ]
        for (path, expected) in table {
            XCTAssertEqual(key(path), expected, path)
        }
    }

    func testThumborSources() throws {
        let cases: [(String, String)] = [
            ("/unsafe/300x200/example.com/a.jpg", "http://example.com/a.jpg"),
            ("/unsafe/300x200/http://example.com/a.jpg", "http://example.com/a.jpg"),
            ("/unsafe/300x200/https://example.com/dir/a.jpg?x=1&y=2", "https://example.com/dir/a.jpg?x=1&y=2"),
            ("/unsafe/300x200/https%3A%2F%2Fexample.com%2Fa%20b.jpg", "https://example.com/a%20b.jpg"),
            ("/unsafe/fit-in/300x200/127.0.0.1:8080/a.jpg", "http://127.0.0.1:8080/a.jpg"),
        ]
        for (path, source) in cases {
            XCTAssertEqual(try ImageRequest.parse(path: path).source.absoluteString, source, path)
        }
    }

    func testThumborRefusals() {
        XCTAssertEqual(status("/unsafe/filters:sepia()/example.com/a.jpg")?.1, "unknownFilter")
        XCTAssertEqual(status("/unsafe/filters:quality(101)/example.com/a.jpg")?.1, "invalidFilterArgument")
        XCTAssertEqual(status("/unsafe/filters:rotate(45)/example.com/a.jpg")?.1, "invalidFilterArgument")
        XCTAssertEqual(status("/unsafe/filters:format(bmp)/example.com/a.jpg")?.1, "invalidFilterArgument")
        XCTAssertEqual(status("/unsafe/filters:quality(80/example.com/a.jpg")?.0, 400)
        XCTAssertEqual(status("/unsafe/300x200/")?.0, 400)
        XCTAssertEqual(status("/unsafe/300x200/javascript:alert(1)")?.0, 400)
    }

    func testThumborRoundTrip() throws {
        let paths = [
            "/unsafe/300x200/smart/example.com/a.jpg", "/unsafe/adaptive-full-fit-in/-300x-200/example.com/a.jpg",
            "/unsafe/meta/trim:bottom-right:5/10x20:110x220/fit-in/origx100/left/bottom/filters:upscale():quality(60):format(png):blur(3):rotate(270)/example.com/a.jpg",
            "/unsafe/300x200/filters:stretch():no_upscale():fill(00ff00):background_color(112233):proportion(2):max_bytes(1000):max_age(5):strip_icc()/example.com/a.jpg",
            "/unsafe/filters:focal(1x2:3x4):round_corner(3,1,2,3,false):brightness(-5):contrast(5):saturation(0.2):rgb(1,2,3):noise(4):sharpen(1,2,false):grayscale()/example.com/a.jpg",
            "/unsafe/filters:watermark(example.com/wm.png,10,20,30,40,none)/https://example.com/a%20b.jpg?x=1",
            "/unsafe/meta/filters:blurhash(4,3):thumb_hash():average(0):palette(5):perceptual_hash():dominant_colors(1):calc_hashsums(sha256,md5)/example.com/a.jpg",
            "/unsafe/filters:autoquality(ssimulacra2,75,20,90,0.5)/example.com/a.jpg",
        ]
        try assertRoundTrips(paths) { "/unsafe/" + ThumborURL.path(for: $0.operations, source: $0.source) }
    }

    /// The first seed of `FuzzServiceURL` (a tolerance after the default corner was rendered as
    /// `trim:10`, which thumbor reads as the bottom-right corner) and every option of thumbor's
    /// integration matrix (its `single_dataset` options alone, and its `combined_dataset` product
    /// of the first two of each part) that this grammar parses: what the renderer writes parses
    /// back to the same operations.
    func testThumborRoundTripOfTheFuzzSeedAndTheIntegrationMatrix() throws {
        let seed =
            "/unsafe/meta/trim:top-left:10/10x20:110x220/adaptive-full-fit-in/-300x-orig/left/top/smart/filters:quality(70):focal(1x2:3x4):watermark(example.com/w.png,-10,center,50,20,none):round_corner(2|3,1,2,3,true)/example.com/a.jpg"
        let render = { (request: ImageRequest) in
            "/unsafe/" + ThumborURL.path(for: request.operations, source: request.source)
        }
        try assertRoundTrips([seed], render: render)

        let trims = ["trim", "trim:top-left", "trim:bottom-right", "trim:top-left:10", "trim:bottom-right:20"]
        let fitIns = ["fit-in", "adaptive-fit-in", "full-fit-in", "adaptive-full-fit-in"]
        let sizes = ["200x200", "-300x100", "100x-300", "-100x-300", "origx300", "200xorig", "origxorig"]
        let filters = [
            "brightness(10)", "contrast(10)", "equalize()", "grayscale()", "rotate(90)", "noise(10)", "quality(5)",
            "redeye()", "rgb(10,-10,20)",
            "round_corner(20,255,255,100)", "sharpen(6,2.5,false)", "sharpen(6,2.5,true)", "strip_exif()",
            "strip_icc()", "watermark(rgba-interlaced.png,10,10,50)", "watermark(rgba-interlaced.png,center,center,50)",
            "watermark(rgba-interlaced.png,repeat,repeat,50)", "fill(ff0000)", "fill(auto)", "fill(ff0000,true)",
            "fill(transparent)", "fill(transparent,true)", "blur(2)", "focal(0x0:1x1)", "no_upscale()",
            "frame(rgba.png)", "extract_focal()", "focal()", "max_age(600)", "upscale()", "format(avif)",
            "format(heic)", "format(heif)",
            "curve([(0,0),(255,255)],[(0,50),(16,51),(255,254)],[(0,0),(255,252)],[(0,48),(255,225)])",
        ].map { "filters:" + $0 }
        let single =
            ["meta"] + trims + ["10x10:100x100"] + fitIns + sizes + ["left", "right", "center"]
            + ["top", "bottom", "middle", "smart"] + filters
        var paths = single.map { "/unsafe/\($0)/example.com/a.jpg" }
        for trim in trims.prefix(2) {
            for fitIn in fitIns.prefix(2) {
                for size in sizes.prefix(2) {
                    for horizontal in ["left", "right"] {
                        for vertical in ["top", "bottom"] {
                            for filter in filters.prefix(2) {
                                paths.append(
                                    "/unsafe/\(trim)/10x10:100x100/\(fitIn)/\(size)/\(horizontal)/\(vertical)/smart/\(filter)/example.com/a.jpg"
                                )
                            }
                        }
                    }
                }
            }
        }
        let parsed = paths.filter { (try? ImageRequest.parse(path: $0)) != nil }
        XCTAssertEqual(parsed.count, paths.count, "every form of the matrix listed here parses")
        try assertRoundTrips(parsed, render: render)
    }

    // MARK: imgproxy

    /// The forms of imgproxy's processing-URL documentation.
    /// The rules that differ between the dialects and change pixels or formats are in the
    /// operations, so that the result key covers them: `fit-in/256x256` and `rs:fit:256:256`
    /// shared a result, though imgproxy draws a small SVG up to the box and thumbor does not.
    func testDialectRulesAreInTheKey() throws {
        let imgproxy = try ImageRequest.parse(path: "/_/rs:fit:256:256/plain/http://example.com/a.svg").operations
        let thumbor = try ImageRequest.parse(path: "/unsafe/fit-in/256x256/example.com/a.svg").operations
        XCTAssertEqual(imgproxy.rules, .imgproxy)
        XCTAssertEqual(thumbor.rules, .thumbor)
        XCTAssertTrue(imgproxy.rules.enlargesVectors && !thumbor.rules.enlargesVectors)
        XCTAssertTrue(imgproxy.canonicalKey.hasPrefix("rules:imgproxy;"))
        XCTAssertNotEqual(imgproxy.canonicalKey, thumbor.canonicalKey)
        var mixed = thumbor
        mixed.rules.enlargesVectors = true
        XCTAssertEqual(mixed.canonicalKey, "rules:thumbor,ev1,gif1,anim0;" + thumbor.canonicalKey, "each rule is keyed")
        var same = imgproxy
        same.rules = .thumbor
        XCTAssertEqual(same.canonicalKey, thumbor.canonicalKey, "the rest of both requests is the same")
    }

    /// The filters of thumbor's own integration matrix (`integration_tests/urls_helpers.py`).
    func testThumborIntegrationMatrixFilters() throws {
        XCTAssertEqual(key("/unsafe/filters:equalize()/example.com/a.jpg"), "rs:fill;el:1;f:equalize()")
        XCTAssertEqual(key("/unsafe/filters:format(heif)/example.com/a.jpg"), "rs:fill;el:1;fmt:heic")
        XCTAssertEqual(
            key("/unsafe/filters:redeye()/example.com/a.jpg"), "rs:fill;el:1", "no eye detector: nothing to do")
        XCTAssertEqual(
            key("/unsafe/filters:focal()/example.com/a.jpg"), "rs:fill;el:1", "a focal() without a region is ignored")
        let curve =
            "filters:curve([(0,0),(255,255)],[(0,50),(16,51),(32,69),(58,85),(92,120),(128,170),(140,186),"
            + "(167,225),(192,245),(225,255),(244,255),(255,254)],[(0,0),(16,2),(32,18),(64,59),(92,116),"
            + "(128,182),(167,211),(192,227),(224,240),(244,247),(255,252)],[(0,48),(16,50),(62,77),(92,110),"
            + "(128,144),(140,153),(167,180),(192,192),(224,217),(244,225),(255,225)])"
        let parsed = try ImageRequest.parse(path: "/unsafe/\(curve)/example.com/a.jpg").operations
        guard case .curve(let all, let red, _, let blue)? = parsed.filters.first else {
            return XCTFail("curve: \(parsed.filters)")
        }
        XCTAssertEqual(all, [0, 0, 255, 255])
        XCTAssertEqual(red.count, 24)
        XCTAssertEqual(Array(blue.suffix(2)), [255, 225])
        try assertRoundTrips(["/unsafe/\(curve)/example.com/a.jpg", "/unsafe/filters:equalize()/example.com/a.jpg"]) {
            "/unsafe/" + ThumborURL.path(for: $0.operations, source: $0.source)
        }
        XCTAssertEqual(status("/unsafe/filters:curve([(0,0)],[(0,0)])/example.com/a.jpg")?.1, "invalidFilterArgument")
        XCTAssertEqual(
            status("/unsafe/filters:curve([(9,0),(3,5)],[(0,0)],[(0,0)],[(0,0)])/example.com/a.jpg")?.1,
            "invalidFilterArgument", "x must rise")

        // extract_focal(): the source is a thumbor URL with a crop: its image is loaded and the
        // crop is the focal region.
        let extracted = try ImageRequest.parse(
            path: "/unsafe/200x100/filters:extract_focal()/localhost:8888/unsafe/100x150:300x200/example.com/b.jpg")
        XCTAssertEqual(extracted.source.absoluteString, "http://example.com/b.jpg")
        XCTAssertEqual(extracted.operations.gravity, .focalRegion(left: 100, top: 150, right: 300, bottom: 200))
        let plain = try ImageRequest.parse(path: "/unsafe/200x100/filters:extract_focal()/example.com/b.jpg")
        XCTAssertEqual(plain.source.absoluteString, "http://example.com/b.jpg")
        XCTAssertEqual(plain.operations.gravity, .center, "no inner crop: nothing to extract")
    }

    func testImgproxyForms() {
        let table: [(String, String)] = [
            (
                "/insecure/rs:fill:300:400:0/g:sm/aHR0cDovL2V4YW1w/bGUuY29tL2ltYWdl/cy9jdXJpb3NpdHku/anBn.png",
                "rs:fill;w:300;h:400;g:sm;fmt:png"
            ),
            (
                "/insecure/resize:fit:300:300/plain/http://img.example.com/pretty/image.jpg@webp",
                "rs:fit;w:300;h:300;fmt:webp"
            ),
            ("/_/rs:fill-down:100:100:1:1/plain/http://example.com/a.jpg", "rs:fill-down;w:100;h:100;el:1;ex:1"),
            ("/_/s:100:50/plain/http://example.com/a.jpg", "rs:fit;w:100;h:50"),
            ("/_/rt:force/w:100/h:50/plain/http://example.com/a.jpg", "rs:force;w:100;h:50"),
            ("/_/rt:auto/mw:10/mh:20/z:2/dpr:1.5/plain/http://example.com/a.jpg", "rs:auto;mw:10;mh:20;z:2,2;dpr:1.5"),
            ("/_/g:fp:0.25:0.75/c:100:50:no/plain/http://example.com/a.jpg", "crop:100,50,no;g:fp,0.25,0.75"),
            (
                "/_/t:10/pd:10:20/ar:0/rot:180/fl:1:0/plain/http://example.com/a.jpg",
                "trim:top-left,10;pd:10,20,10,20;ar:0;rot:180;flh:1"
            ),
            (
                "/_/bg:255:0:0/bl:2/sh:0.5/pix:8/plain/http://example.com/a.jpg",
                "bg:ff0000;f:blur(0,2);f:sharpen(1,0.5,0);f:pixelate(8)"
            ),
            (
                "/_/q:70/fq:webp:60:avif:50/mb:50000/f:avif/plain/http://example.com/a.jpg",
                "fmt:avif;q:70;fq:avif,50;fq:webp,60;mb:50000"
            ),
            (
                "/_/sm:0/scp:1/kcr:1/cb:v2/exp:4102444800/fn:photo/att:1/plain/http://example.com/a.jpg",
                "sm:0;scp:1;kcr:1;exp:4102444800;fn:photo;att:1;cb:v2"
            ),
            ("/_/ext:png/plain/http%3A%2F%2Fexample.com%2Fa%20b.jpg", "fmt:png"),
        ]
        for (path, expected) in table {
            XCTAssertEqual(key(path), expected, path)
        }
    }

    func testEquivalentSpellingsShareOneKey() {
        let spellings = [
            "/_/rs:fill:300:200/plain/http://example.com/a.jpg",
            "/_/rt:fill/w:300/h:200/plain/http://example.com/a.jpg",
            "/_/h:200/w:300/resizing_type:fill/plain/http://example.com/a.jpg",
            "/_/resize:fill:300:200:0:0/g:ce/ar:1/sm:1/q:0/plain/http://example.com/a.jpg",
            "/insecure/size:300:200/rt:fill/aHR0cDovL2V4YW1wbGUuY29tL2EuanBn",
        ]
        let keys = Set(spellings.compactMap { key($0) })
        XCTAssertEqual(keys, ["rs:fill;w:300;h:200"])
        // Across grammars too, where they mean the same thing.
        XCTAssertEqual(
            key("/unsafe/fit-in/300x200/filters:quality(70)/example.com/a.jpg"),
            key("/_/rs:fit:300:200/q:70/plain/http://example.com/a.jpg"))
    }

    func testPresets() {
        let presets = [
            "thumb": ["rs:fit:256:256", "q:80"], "webp": ["f:webp"], "default": ["sm:1", "q:85"], "loop": ["pr:loop"],
        ]
        XCTAssertEqual(
            key("/_/pr:thumb:webp/plain/http://example.com/a.jpg", presets: presets), "rs:fit;w:256;h:256;fmt:webp;q:80"
        )
        XCTAssertEqual(
            key("/_/preset:thumb/q:60/plain/http://example.com/a.jpg", presets: presets), "rs:fit;w:256;h:256;q:60")
        XCTAssertEqual(
            key("/_/w:10/plain/http://example.com/a.jpg", presets: presets), "rs:fit;w:10;q:85",
            "the default preset applies first")
        XCTAssertEqual(status("/_/pr:nope/plain/http://example.com/a.jpg", presets: presets)?.1, "unknownPreset")
        XCTAssertEqual(status("/_/pr:loop/plain/http://example.com/a.jpg", presets: presets)?.1, "invalidOption")
    }

    func testImgproxySourcesAndRefusals() throws {
        XCTAssertEqual(
            try ImageRequest.parse(path: "/_/w:10/aHR0cDovL2V4YW1w/bGUuY29tL2ltYWdl/cy9jdXJpb3NpdHku/anBn.png").source
                .absoluteString,
            "http://example.com/images/curiosity.jpg")
        XCTAssertEqual(
            try ImageRequest.parse(path: "/_/plain/https://example.com/a.jpg?x=1%26y").source.absoluteString,
            "https://example.com/a.jpg?x=1&y")
        XCTAssertEqual(status("/_/sepia:1/plain/http://example.com/a.jpg")?.1, "unknownOption")
        XCTAssertEqual(status("/_/rs:zoom:1:1/plain/http://example.com/a.jpg")?.1, "invalidOption")
        XCTAssertEqual(status("/_/w:-1/plain/http://example.com/a.jpg")?.1, "invalidOption")
        XCTAssertEqual(status("/_/el:maybe/plain/http://example.com/a.jpg")?.1, "invalidOption")
        XCTAssertEqual(status("/_/rot:45/plain/http://example.com/a.jpg")?.1, "invalidOption")
        XCTAssertEqual(status("/_/g:no:10:10/plain/http://example.com/a.jpg")?.1, "invalidOption")
        XCTAssertEqual(status("/_/w:10/enc/abcdef")?.1, "unsupportedSource")
        XCTAssertEqual(status("/_/w:10/plain/")?.0, 400)
        XCTAssertEqual(status("/_/w:10/plain/example.com/a.jpg")?.0, 400, "imgproxy sources are absolute")
        XCTAssertEqual(status("/_/w:10/!!!notbase64")?.0, 400)
        XCTAssertEqual(
            status("/_/fn:a%2Fb/plain/http://example.com/a.jpg")?.0, nil, "a percent-encoded slash stays text")
    }

    func testImgproxyRoundTrip() throws {
        let paths = [
            "/_/rs:fill:300:400:1:1/g:sm/plain/http://example.com/a.jpg@png",
            "/_/rt:auto/w:10/h:20/mw:5/mh:6/z:1.5:2/dpr:2/g:fp:0.1:0.9/c:0.5:0.5:soea/t:12/pd:1:2:3:4/ar:0/rot:90/fl:0:1/plain/https://example.com/a%20b.jpg?q=1",
            "/_/bg:0a0b0c/bl:1.5/sh:2/pix:4/q:55/fq:jpeg:40:webp:70/mb:999/aq:dssim:0.02:70:80:0.001/sm:0/scp:1/kcr:1/cb:x/exp:100/fn:my%20file/att:1/plain/http://example.com/a.jpg@avif",
        ]
        try assertRoundTrips(paths) { "/_" + ImgproxyURL.path(for: $0.operations, source: $0.source) }
    }

    // MARK: Video

    /// imgproxy's `vts`/`vtk` and thumbor-video-engine's `still()`: in the key (one video at two
    /// times is two results), in both spellings, refused when malformed, and rendered back.
    func testVideoOptions() throws {
        XCTAssertEqual(key("/_/vts:2.5/vtk:1/plain/http://example.com/a.mp4"), "vts:2.5;vtk:1")
        XCTAssertEqual(
            key("/_/video_thumbnail_second:2.5/video_thumbnail_keyframes:true/plain/http://example.com/a.mp4"),
            "vts:2.5;vtk:1")
        XCTAssertNotEqual(
            key("/_/vts:1/plain/http://example.com/a.mp4"), key("/_/vts:2/plain/http://example.com/a.mp4"))
        XCTAssertEqual(key("/unsafe/filters:still()/example.com/a.mp4"), "rs:fill;el:1;vts:0;still:1")
        XCTAssertEqual(key("/unsafe/filters:still(01:02:03.5)/example.com/a.mp4"), "rs:fill;el:1;vts:3723.5;still:1")
        XCTAssertEqual(key("/unsafe/filters:still(00:12)/example.com/a.mp4"), "rs:fill;el:1;vts:12;still:1")
        XCTAssertEqual(key("/unsafe/filters:still(-3)/example.com/a.mp4"), "rs:fill;el:1;vts:0;still:1")
        for path in [
            "/_/vts:-1/plain/http://example.com/a.mp4", "/_/vts:x/plain/http://example.com/a.mp4",
            "/_/vtk:maybe/plain/http://example.com/a.mp4", "/unsafe/filters:still(1:2)/example.com/a.mp4",
            "/unsafe/filters:still(abc)/example.com/a.mp4", "/unsafe/filters:still(1,2)/example.com/a.mp4",
        ] {
            XCTAssertEqual(status(path)?.0, 400, path)
        }
        try assertRoundTrips(["/_/rs:fit:160:90/vts:12.25/vtk:1/plain/http://example.com/a.mp4"]) {
            "/_" + ImgproxyURL.path(for: $0.operations, source: $0.source)
        }
        try assertRoundTrips(["/unsafe/160x90/filters:still(7.5)/example.com/a.mp4"]) {
            "/unsafe/" + ThumborURL.path(for: $0.operations, source: $0.source)
        }
    }

    func testVideoStillsAndVideoOutput() throws {
        let source = "plain/http://example.com/a.mp4"
        XCTAssertEqual(key("/_/vtt:2:4:3:160:90/\(source)"), "vst:tile,4,3,2,160,90,0,0,0")
        XCTAssertEqual(
            key("/_/video_thumbnail_tile:-1:4:3:160:90:t:1:true:0.25:1/\(source)"),
            "vst:tile,4,3,-1,160,90,1,1,1,0.25,1")
        XCTAssertEqual(key("/_/vta:0.5:100:10:160:0/\(source)"), "vst:anim,10,100,0.5,160,0,0,0,0")
        XCTAssertEqual(key("/_/vtt:0:4:3:160:90/\(source)"), "", "a step of 0 is off")
        XCTAssertNotEqual(key("/_/vtt:2:4:3:160:90/\(source)"), key("/_/vta:2:4:3:160:90/\(source)"))
        XCTAssertEqual(key("/_/\(source)@mp4"), "fmt:mp4")
        XCTAssertEqual(key("/_/\(source)@best"), "fmt:best")
        XCTAssertEqual(key("/_/f:best/\(source)"), "fmt:best")
        XCTAssertEqual(key("/unsafe/filters:format(best)/example.com/a.gif"), "rs:fill;el:1;fmt:best")
        XCTAssertEqual(key("/_/f:mp4/\(source)"), "fmt:mp4")
        XCTAssertEqual(key("/unsafe/filters:gifv()/example.com/a.gif"), "rs:fill;el:1;gifv:mp4")
        XCTAssertEqual(key("/unsafe/filters:gifv(webm)/example.com/a.gif"), "rs:fill;el:1;gifv:webm")
        XCTAssertEqual(key("/unsafe/filters:format(webm)/example.com/a.gif"), "rs:fill;el:1;fmt:webm")
        for path in [
            "/_/vtt:1:0:3:160:90/\(source)", "/_/vtt:1:4:3:160/\(source)", "/_/vtt:1:4:3:160:90:maybe/\(source)",
            "/_/vtt:1:4:3:160:90:1:1:1:2:0/\(source)", "/_/vta:1:0:3:160:90/\(source)",
            "/_/vta:1:100:0:160:90/\(source)",
            "/unsafe/filters:gifv(avi)/example.com/a.gif",
        ] {
            XCTAssertEqual(status(path)?.0, 400, path)
        }
        try assertRoundTrips([
            "/_/vts:0/vtt:-1:4:3:160:90:1:0:1:0.25:0.75/\(source)", "/_/vta:1.5:120:8:320:0/\(source)@mp4",
            "/_/w:300/\(source)@best",
        ]) {
            "/_" + ImgproxyURL.path(for: $0.operations, source: $0.source)
        }
        try assertRoundTrips([
            "/unsafe/160x90/filters:gifv(webm)/example.com/a.gif", "/unsafe/filters:format(best)/a.jpg",
        ]) {
            "/unsafe/" + ThumborURL.path(for: $0.operations, source: $0.source)
        }
    }

    // MARK: Routing

    func testTheFirstSegmentDecidesTheGrammar() throws {
        XCTAssertEqual(try ImageRequest.parse(path: "/unsafe/example.com/a.jpg").grammar, .thumbor)
        XCTAssertEqual(
            try ImageRequest.parse(path: "/" + String(repeating: "a", count: 27) + "=/example.com/a.jpg").grammar,
            .thumbor)
        XCTAssertEqual(try ImageRequest.parse(path: "/insecure/plain/http://example.com/a.jpg").grammar, .imgproxy)
        XCTAssertEqual(try ImageRequest.parse(path: "/_/plain/http://example.com/a.jpg").grammar, .imgproxy)
        XCTAssertEqual(
            try ImageRequest.parse(path: "/" + String(repeating: "b", count: 43) + "/plain/http://example.com/a.jpg")
                .signature,
            String(repeating: "b", count: 43))
        let info = try ImageRequest.parse(path: "/info/_/plain/http://example.com/a.jpg")
        XCTAssertTrue(info.operations.metadataOnly)
        XCTAssertEqual(info.grammar, .imgproxy)
        XCTAssertEqual(status("/images/a.jpg")?.0, 400)
        XCTAssertEqual(status("/")?.0, 400)
        XCTAssertEqual(status("nothing")?.0, 400)
        XCTAssertEqual(status("/unsafe")?.0, 400)
    }
}
