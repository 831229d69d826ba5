//! The RESP2 codec: the request parser on whole, fragmented and pipelined input, every
//! protocol error, limits, and the encoder.

use plumb_resp::*;
use proptest::prelude::*;

type Args = Vec<Vec<u8>>;

fn args(items: &[&[u8]]) -> Args {
    items.iter().map(|a| a.to_vec()).collect()
}

/// Every command in `input`, fed in pieces cut at `cuts`; the error if one comes.
fn parse_in_pieces(input: &[u8], cuts: &[usize], limits: Limits) -> (Vec<Args>, Option<String>) {
    let mut parser = Parser::new(limits);
    let mut commands = Vec::new();
    let mut start = 0;
    for &end in cuts.iter().chain(std::iter::once(&input.len())) {
        let end = end.clamp(start, input.len());
        parser.feed(&input[start..end]);
        start = end;
        loop {
            match parser.next_command() {
                Ok(Some(c)) => commands.push(c),
                Ok(None) => break,
                Err(e) => return (commands, Some(e.text().to_string())),
            }
        }
    }
    (commands, None)
}

fn parse_all(input: &[u8]) -> (Vec<Args>, Option<String>) {
    parse_in_pieces(input, &[], Limits::default())
}

fn error_of(input: &[u8]) -> String {
    parse_all(input).1.expect("a protocol error")
}

/// A stream with multibulk and inline commands, binary data, empty requests and quotes.
const STREAM: &[u8] = b"*3\r\n$3\r\nSET\r\n$3\r\nk\r\n\r\n$0\r\n\r\n\
PING\r\n\
*0\r\n\
\r\n\
   \n\
*-1\r\n\
set \"a b\" 'c d' \"\\x41\\n\"\n\
*2\r\n$4\r\nECHO\r\n$12\r\n*1\r\n$4\r\nPING\r\n";

fn stream_commands() -> Vec<Args> {
    vec![
        args(&[b"SET", b"k\r\n", b""]),
        args(&[b"PING"]),
        args(&[b"set", b"a b", b"c d", b"A\n"]),
        args(&[b"ECHO", b"*1\r\n$4\r\nPING"]),
    ]
}

#[test]
fn whole_input_parses_every_kind_of_request() {
    assert_eq!(parse_all(STREAM), (stream_commands(), None));
}

#[test]
fn input_split_at_every_byte_boundary_parses_the_same() {
    for cut in 0..=STREAM.len() {
        assert_eq!(
            parse_in_pieces(STREAM, &[cut], Limits::default()),
            (stream_commands(), None),
            "cut at {cut}"
        );
    }
    for (a, b) in [(3, 9), (10, 11), (20, 40), (50, 51)] {
        let got = parse_in_pieces(STREAM, &[a, b], Limits::default());
        assert_eq!(got, (stream_commands(), None), "cuts at {a}, {b}");
    }
}

#[test]
fn input_fed_one_byte_at_a_time_parses_the_same() {
    let cuts: Vec<usize> = (1..STREAM.len()).collect();
    assert_eq!(
        parse_in_pieces(STREAM, &cuts, Limits::default()),
        (stream_commands(), None)
    );
}

#[test]
fn pipelined_commands_come_out_in_order() {
    let mut input = Vec::new();
    let mut expected = Vec::new();
    for i in 0..1_000 {
        let key = format!("key:{i}").into_bytes();
        let cmd = args(&[b"SET", &key, b"xxx"]);
        encode(&Resp::bulks(cmd.clone()), &mut input);
        expected.push(cmd);
        if i % 10 == 0 {
            input.extend_from_slice(b"PING\r\n");
            expected.push(args(&[b"PING"]));
        }
    }
    let (commands, error) = parse_all(&input);
    assert_eq!(error, None);
    assert_eq!(commands, expected);
}

#[test]
fn need_more_until_the_request_is_complete() {
    let mut parser = Parser::default();
    for piece in [&b"*2\r\n$3\r\nGET"[..], b"\r\n$1\r", b"\nk", b"\r"] {
        parser.feed(piece);
        assert_eq!(parser.next_command(), Ok(None));
    }
    parser.feed(b"\n");
    assert_eq!(parser.next_command(), Ok(Some(args(&[b"GET", b"k"]))));
    assert_eq!(parser.next_command(), Ok(None));
    assert_eq!(parser.buffered(), 0);
}

#[test]
fn inline_commands_split_like_redis() {
    let cases: &[(&[u8], &[&[u8]])] = &[
        (b"PING", &[b"PING"]),
        (b"  set   k\tv  ", &[b"set", b"k", b"v"]),
        (b"\"\"", &[b""]),
        (b"a\"b c\" d", &[b"ab c", b"d"]),
        (b"\"\\n\\r\\t\\b\\a\\\\\\\"\\q\"", &[b"\n\r\t\x08\x07\\\"q"]),
        (b"\"\\x4a\\x4B\\xzz\"", &[b"JKxzz"]),
        (b"'it\\'s' '\\n'", &[b"it's", b"\\n"]),
        (b"a\x00b c", &[b"a"]),
        (b"x\x0by", &[b"x\x0by"]),
        (b"", &[]),
        (b" \x0b\x0c ", &[]),
    ];
    for (line, expected) in cases {
        assert_eq!(
            split_args(line),
            Some(args(expected)),
            "{}",
            line.escape_ascii()
        );
    }
    for bad in [
        &b"\"open"[..],
        b"'open",
        b"\"a\"b",
        b"'a'b",
        b"a\"b c\"d",
        b"\"ends with \\",
    ] {
        assert_eq!(split_args(bad), None, "{}", bad.escape_ascii());
    }
}

#[test]
fn inline_line_endings_and_blank_lines() {
    let (commands, error) = parse_all(b"GET a\nGET b\r\n\r\n\n  \r\nGET c\r\n");
    assert_eq!(error, None);
    assert_eq!(
        commands,
        vec![
            args(&[b"GET", b"a"]),
            args(&[b"GET", b"b"]),
            args(&[b"GET", b"c"])
        ]
    );
}

#[test]
fn protocol_errors_have_redis_texts() {
    let e = |what: &str| format!("ERR Protocol error: {what}");
    let cases: &[(&[u8], String)] = &[
        (b"*abc\r\n", e("invalid multibulk length")),
        (b"*01\r\n", e("invalid multibulk length")),
        (b"*+1\r\n", e("invalid multibulk length")),
        (b"*\r\n", e("invalid multibulk length")),
        (b"*2000000000\r\n", e("invalid multibulk length")),
        (b"*1\r\n$x\r\n", e("invalid bulk length")),
        (b"*1\r\n$-1\r\n", e("invalid bulk length")),
        (b"*1\r\n$\r\n", e("invalid bulk length")),
        (b"*1\r\n$67108865\r\n", e("invalid bulk length")),
        (b"*1\r\nx\r\n", e("expected '$', got 'x'")),
        (b"*1\r\n\r\n\r\n", e("expected '$', got ' '")), // line breaks become spaces
        (b"*2\r\n$1\r\na\r\n:1\r\n", e("expected '$', got ':'")),
        (b"\"unbalanced\r\n", e("unbalanced quotes in request")),
        (b"'a'b\r\n", e("unbalanced quotes in request")),
    ];
    for (input, expected) in cases {
        assert_eq!(&error_of(input), expected, "{}", input.escape_ascii());
    }
}

#[test]
fn overlong_lines_are_errors_however_the_input_is_split() {
    let limits = Limits {
        max_inline_len: 16,
        ..Limits::default()
    };
    let e = |what: &str| Some(format!("ERR Protocol error: {what}"));
    let long_inline = [&[b'a'; 17][..], b"\r\n"].concat();
    let long_count = [&b"*"[..], &[b'1'; 17], b"\r\n"].concat();
    let long_bulk = [&b"*1\r\n$"[..], &[b'1'; 17], b"\r\n"].concat();
    let cases = [
        (long_inline, e("too big inline request")),
        (long_count, e("too big mbulk count string")),
        (long_bulk, e("too big bulk count string")),
    ];
    for (input, expected) in cases {
        for cut in 0..=input.len() {
            let (_, error) = parse_in_pieces(&input, &[cut], limits);
            assert_eq!(error, expected, "{} cut at {cut}", input.escape_ascii());
        }
        // Without a line end at all, the limit still ends the wait.
        let (_, error) = parse_in_pieces(&input[..input.len() - 2], &[], limits);
        assert_eq!(error, expected);
    }
    // A line of exactly the limit is fine.
    let ok = [&[b'a'; 16][..], b"\r\n"].concat();
    assert_eq!(parse_in_pieces(&ok, &[], limits).1, None);
}

#[test]
fn limits_are_enforced() {
    let limits = Limits {
        max_bulk_len: 4,
        max_array_len: 3,
        max_inline_len: 64,
    };
    let run = |input: &[u8]| parse_in_pieces(input, &[], limits);
    assert_eq!(
        run(b"*3\r\n$4\r\nabcd\r\n$0\r\n\r\n$1\r\nx\r\n").0,
        vec![args(&[b"abcd", b"", b"x"])]
    );
    assert_eq!(
        run(b"*4\r\n").1.as_deref(),
        Some("ERR Protocol error: invalid multibulk length")
    );
    assert_eq!(
        run(b"*1\r\n$5\r\n").1.as_deref(),
        Some("ERR Protocol error: invalid bulk length")
    );
}

#[test]
fn errors_are_sticky_and_commands_before_them_survive() {
    let mut parser = Parser::default();
    parser.feed(b"PING\r\n*x\r\nPING\r\n");
    assert_eq!(parser.next_command(), Ok(Some(args(&[b"PING"]))));
    let error = parser.next_command().unwrap_err();
    assert_eq!(error.text(), "ERR Protocol error: invalid multibulk length");
    assert_eq!(
        error.to_resp(),
        Resp::Error("ERR Protocol error: invalid multibulk length".into())
    );
    parser.feed(b"PING\r\n");
    assert_eq!(parser.next_command(), Err(error));
}

#[test]
fn crlf_after_bulk_data_is_skipped_unchecked_like_redis() {
    // Redis trusts the length and skips two bytes; so does the parser.
    let (commands, error) = parse_all(b"*1\r\n$4\r\nPINGxx*1\r\n$4\r\nPING\r\n");
    assert_eq!(error, None);
    assert_eq!(commands, vec![args(&[b"PING"]), args(&[b"PING"])]);
}

#[test]
fn encode_writes_resp2() {
    let cases: Vec<(Resp, &[u8])> = vec![
        (Resp::ok(), b"+OK\r\n"),
        (Resp::Simple("a\r\nb".into()), b"+a  b\r\n"),
        (Resp::error("ERR x\ny"), b"-ERR x y\r\n"),
        (Resp::Integer(-12), b":-12\r\n"),
        (Resp::Integer(i64::MIN), b":-9223372036854775808\r\n"),
        (Resp::nil(), b"$-1\r\n"),
        (Resp::bulk(&b""[..]), b"$0\r\n\r\n"),
        (Resp::bulk(&b"a\r\nb"[..]), b"$4\r\na\r\nb\r\n"),
        (Resp::Array(None), b"*-1\r\n"),
        (Resp::array(vec![]), b"*0\r\n"),
        (
            Resp::array(vec![
                Resp::Integer(1),
                Resp::bulks([&b"x"[..]]),
                Resp::nil(),
            ]),
            b"*3\r\n:1\r\n*1\r\n$1\r\nx\r\n$-1\r\n",
        ),
    ];
    for (value, bytes) in cases {
        assert_eq!(value.to_bytes(), bytes, "{value:?}");
    }
}

proptest! {
    #[test]
    fn random_bytes_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..300),
        cuts in proptest::collection::vec(0usize..300, 0..6),
        small in any::<bool>(),
    ) {
        let limits = if small {
            Limits { max_bulk_len: 8, max_array_len: 4, max_inline_len: 16 }
        } else {
            Limits::default()
        };
        let mut cuts = cuts;
        cuts.sort();
        let (commands, _) = parse_in_pieces(&bytes, &cuts, limits);
        prop_assert!(commands.iter().all(|c| !c.is_empty()));
    }

    #[test]
    fn random_resp_like_bytes_never_panic(
        pieces in proptest::collection::vec(
            prop_oneof![
                Just(b"*".to_vec()), Just(b"$".to_vec()), Just(b"\r\n".to_vec()),
                Just(b"\"".to_vec()), Just(b"'".to_vec()), Just(b"\\".to_vec()),
                Just(b"-1".to_vec()), Just(b"0".to_vec()), Just(b"2".to_vec()),
                Just(b"3".to_vec()), Just(b" ".to_vec()), Just(b"ab".to_vec()),
            ],
            0..60,
        ),
    ) {
        let bytes = pieces.concat();
        for cut in [0, bytes.len() / 3, bytes.len() / 2] {
            let _ = parse_in_pieces(&bytes, &[cut], Limits::default());
        }
    }

    #[test]
    fn encoded_arrays_of_bulk_strings_parse_back(
        commands in proptest::collection::vec(
            proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..20), 1..6),
            1..5,
        ),
        cuts in proptest::collection::vec(0usize..400, 0..4),
    ) {
        let mut bytes = Vec::new();
        for c in &commands {
            encode(&Resp::bulks(c.clone()), &mut bytes);
        }
        let mut cuts = cuts;
        cuts.sort();
        prop_assert_eq!(parse_in_pieces(&bytes, &cuts, Limits::default()), (commands, None));
    }
}
