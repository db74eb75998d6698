/// The one UTF-8 checker and decoder. ``count(_:)`` checks a wire's bytes strictly (every
/// string and text content a message or a saved state carries); ``forEachScalar(of:_:)``
/// decodes bytes known valid (a String's storage, a text's own content, bytes `count`
/// accepted), without checks (decoding a String's storage here instead of iterating
/// `unicodeScalars`, 29 instructions a scalar, saved an eighth of creating a note).
@usableFromInline
package enum UTF8Scalars {
  /// Bytes that are not strictly valid UTF-8.
  package struct Invalid: Error {}

  /// The number of scalars of strictly valid UTF-8 (no overlong forms, surrogates, values
  /// above U+10FFFF, stray continuation bytes or cut sequences), and how many of them lie
  /// outside the Basic Multilingual Plane (take two UTF-16 code units).
  ///
  /// A deterministic automaton checks the bytes without a branch a byte (``Automaton``):
  /// the next state is the byte's row of the table shifted by the current state, so the
  /// only dependency from byte to byte is one shift, and lead bytes of different lengths
  /// in a row (prose with accents, CJK and emoji) cost no mispredicted branch. Eight
  /// bytes that are all ASCII take one step; the scalars are counted eight bytes at a
  /// time (bytes that are not continuation bytes).
  ///
  /// - Complexity: O(n) for n bytes.
  @inline(__always)
  package static func count(_ input: UnsafeBufferPointer<UInt8>) throws(Invalid) -> (
    scalars: Int, supplementary: Int
  ) {
    let high: UInt64 = 0x8080_8080_8080_8080
    var state: UInt64 = 0
    var continuations = 0
    var supplementary = 0
    var position = 0
    let end = input.count
    Automaton.rows.withUnsafeBufferPointer { rows in
      let raw = UnsafeRawBufferPointer(input)
      while end &- position >= 8 {
        let word = UInt64(
          littleEndian: raw.loadUnaligned(fromByteOffset: position, as: UInt64.self))
        position &+= 8
        guard word & high != 0 else {
          // Eight ASCII bytes act as one: they keep `accept`, and end any other state.
          state = rows[0x41] &>> state
          continue
        }
        // A byte's top bit is the tally's: continuation bytes are 10xxxxxx, the leads of
        // four-byte sequences 11110xxx (anything 11111xxx fails the automaton).
        let continuation = word & ~(word &<< 1) & high
        let fourByteLead = word & (word &<< 1) & (word &<< 2) & (word &<< 3) & high
        continuations &+= Int(
          truncatingIfNeeded: ((continuation &>> 7) &* 0x0101_0101_0101_0101) &>> 56)
        supplementary &+= Int(
          truncatingIfNeeded: ((fourByteLead &>> 7) &* 0x0101_0101_0101_0101) &>> 56)
        var bytes = word
        for _ in 0..<8 {
          state = rows[Int(truncatingIfNeeded: bytes & 0xFF)] &>> state
          bytes &>>= 8
        }
      }
      // The last bytes, one at a time.
      while position < end {
        let byte = input[position]
        position &+= 1
        state = rows[Int(byte)] &>> state
        if byte & 0xC0 == 0x80 { continuations &+= 1 }
        if byte >= 0xF0 { supplementary &+= 1 }
      }
    }
    guard state & Automaton.stateMask == Automaton.accept else { throw Invalid() }
    return (end &- continuations, supplementary)
  }

  /// The automaton of ``count(_:)``: a state is a shift (six bits a state, nine states),
  /// and a byte's row holds, at each state's shift, the shift of the state it leads to.
  /// `rows[byte] &>> state` is the next state in its low six bits (a shift by a UInt64
  /// reads only the low six bits of its amount, so the bits above need no mask).
  enum Automaton {
    /// The low six bits of a state.
    static let stateMask: UInt64 = 63
    /// Between scalars: the only state that may end the input.
    static let accept: UInt64 = 0
    /// After a byte that no valid UTF-8 has there; never left.
    static let reject: UInt64 = 6
    /// One, two or three continuation bytes (80–BF) to go.
    static let one: UInt64 = 12
    static let two: UInt64 = 18
    static let three: UInt64 = 24
    /// After E0 (A0–BF next: no overlong form), ED (80–9F: no surrogate), F0 (90–BF: no
    /// overlong form) and F4 (80–8F: nothing above U+10FFFF).
    static let afterE0: UInt64 = 30
    static let afterED: UInt64 = 36
    static let afterF0: UInt64 = 42
    static let afterF4: UInt64 = 48

    /// Each byte's row.
    static let rows: [UInt64] = (0...255).map { byte in
      let continuation = 0x80...0xBF
      let fromAccept: UInt64 =
        switch byte {
        case 0x00...0x7F: accept
        case 0xC2...0xDF: one
        case 0xE0: afterE0
        case 0xED: afterED
        case 0xE1...0xEF: two
        case 0xF0: afterF0
        case 0xF1...0xF3: three
        case 0xF4: afterF4
        default: reject
        }
      let transitions: [(from: UInt64, to: UInt64)] = [
        (accept, fromAccept), (reject, reject),
        (one, continuation.contains(byte) ? accept : reject),
        (two, continuation.contains(byte) ? one : reject),
        (three, continuation.contains(byte) ? two : reject),
        (afterE0, (0xA0...0xBF).contains(byte) ? one : reject),
        (afterED, (0x80...0x9F).contains(byte) ? one : reject),
        (afterF0, (0x90...0xBF).contains(byte) ? two : reject),
        (afterF4, (0x80...0x8F).contains(byte) ? two : reject),
      ]
      return transitions.reduce(0) { $0 | $1.to << $1.from }
    }
  }

  /// The scalars of strictly valid UTF-8 (checked by ``count(_:)``, then decoded), and how
  /// many lie outside the Basic Multilingual Plane.
  ///
  /// - Complexity: O(n) for n bytes.
  package static func decode(_ input: UnsafeBufferPointer<UInt8>) throws(Invalid) -> (
    scalars: [Unicode.Scalar], supplementary: Int
  ) {
    _ = try count(input)
    return decode(valid: input)
  }

  /// The scalars of valid UTF-8 `input` (a String's storage, a text's own content, bytes
  /// ``count(_:)`` accepted), and how many lie outside the Basic Multilingual Plane.
  ///
  /// - Complexity: O(n) for n bytes.
  @inlinable @inline(__always)
  package static func decode(valid input: UnsafeBufferPointer<UInt8>) -> (
    scalars: [Unicode.Scalar], supplementary: Int
  ) {
    var supplementary = 0
    // At most a scalar a byte, whatever the bytes: `forEachScalar` moves on at least one.
    let scalars = [Unicode.Scalar](unsafeUninitializedCapacity: input.count) {
      output, written in
      supplementary = forEachScalar(of: input) { scalar in
        output[written] = scalar
        written += 1
      }
    }
    return (scalars, supplementary)
  }

  /// Calls `body` with each scalar of valid UTF-8 `input` in order; returns how many lie
  /// outside the Basic Multilingual Plane. The bytes are trusted, never checked here: a
  /// String's storage, a text's own content, or bytes ``count(_:)`` accepted.
  ///
  /// Inlinable: the text, in another module, decodes its content through it, and there a
  /// call of `body` a scalar cost a closure context each (#46).
  @inlinable @inline(__always)
  @discardableResult
  package static func forEachScalar(
    of input: UnsafeBufferPointer<UInt8>, _ body: (Unicode.Scalar) -> Void
  ) -> Int {
    var supplementary = 0
    var position = 0
    let end = input.count
    func continuation(_ step: Int) -> UInt32 { UInt32(input[position &+ step] & 0x3F) }
    while position < end {
      let lead = input[position]
      let value: UInt32
      if lead < 0x80 {
        value = UInt32(lead)
        position &+= 1
      } else if lead < 0xE0 {
        value = UInt32(lead & 0x1F) << 6 | continuation(1)
        position &+= 2
      } else if lead < 0xF0 {
        value = UInt32(lead & 0x0F) << 12 | continuation(1) << 6 | continuation(2)
        position &+= 3
      } else {
        value =
          UInt32(lead & 0x07) << 18 | continuation(1) << 12 | continuation(2) << 6
          | continuation(3)
        position &+= 4
        supplementary &+= 1
      }
      // Valid UTF-8 decodes to a valid scalar value.
      body(unsafeBitCast(value, to: Unicode.Scalar.self))
    }
    return supplementary
  }

  /// Where the `scalars` scalars of valid UTF-8 `input` from byte `start` end (at most at
  /// its end), and how many of them lie outside the Basic Multilingual Plane, read from
  /// their lead bytes alone.
  @inlinable @inline(__always)
  package static func advance(
    _ input: UnsafeBufferPointer<UInt8>, from start: Int, scalars: Int
  ) -> (end: Int, supplementary: Int) {
    var position = start
    var supplementary = 0
    for _ in 0..<scalars {
      guard position < input.count else { break }
      let lead = input[position]
      let width = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4
      position &+= width
      if width == 4 { supplementary &+= 1 }
    }
    return (Swift.min(position, input.count), supplementary)
  }
}

extension UTF8Scalars {
  /// The scalars of a string's UTF-8 storage (valid already) and their UTF-16 length,
  /// decoded in one pass.
  ///
  /// - Complexity: O(n) for n UTF-8 bytes.
  package static func scalarsAndUTF16Count(ofValid utf8: UnsafeBufferPointer<UInt8>) -> (
    scalars: [Unicode.Scalar], utf16Count: Int
  ) {
    let decoded = decode(valid: utf8)
    return (decoded.scalars, decoded.scalars.count + decoded.supplementary)
  }
}

extension UTF8Scalars {
  /// How many scalars a string's UTF-8 storage (valid already) holds and how many UTF-16
  /// code units they take, counted without decoding or checking them: a scalar starts at
  /// each byte that is not a continuation byte, and takes two UTF-16 units when its lead
  /// byte is 0xF0 or above.
  ///
  /// Inlinable: a keystroke's one byte took a call across modules, a quarter of the count.
  ///
  /// - Complexity: O(n) for n UTF-8 bytes.
  @inlinable
  package static func counts(ofValid utf8: UnsafeBufferPointer<UInt8>) -> (
    scalars: Int, utf16: Int
  ) {
    var scalars = 0
    var supplementary = 0
    for byte in utf8 {
      if byte & 0xC0 != 0x80 { scalars &+= 1 }
      if byte >= 0xF0 { supplementary &+= 1 }
    }
    return (scalars, scalars &+ supplementary)
  }
}
