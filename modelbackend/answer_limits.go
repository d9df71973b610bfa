package modelbackend

import "fmt"

// Decoding JSON costs far more memory than its bytes: an answer of 4 MiB
// of "{}," elements once cost hundreds of MB to decode. An answer is
// therefore scanned first, without allocating, and refused when it nests
// deeper or holds more values than any answer the profiles ask for.
//
// An honest answer is far below both bounds: the largest is one with
// logprobs, about 70 values per generated token (ten alternatives, each
// with its bytes), and the profiles that ask for logprobs ask for at most
// 64 tokens (room for about 230); a verdict's text is one string, whatever
// its length. The largest answer still decoded costs about 3 MB.
const (
	maxAnswerValues = 1 << 14
	maxAnswerDepth  = 32
)

// checkAnswerShape counts the JSON values of body (commas and opened
// containers, outside strings) and its nesting depth. Invalid JSON passes:
// the decoder that follows refuses it.
func checkAnswerShape(body []byte) error {
	depth, values := 0, 0
	inString, escaped := false, false
	for _, c := range body {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			values++
			if depth++; depth > maxAnswerDepth {
				return &malformedError{msg: fmt.Sprintf("JSON nested deeper than %d", maxAnswerDepth)}
			}
		case '}', ']':
			depth--
		case ',':
			values++
		}
		if values > maxAnswerValues {
			return &malformedError{msg: fmt.Sprintf("more than %d JSON values", maxAnswerValues)}
		}
	}
	return nil
}
