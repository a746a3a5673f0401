package sopsfile

import (
	"errors"
	"strconv"
	"time"
)

// macOnlyEncryptedInit starts the MAC of a file with mac_only_encrypted, so
// that it never equals the MAC over all values: SHA-256("sops"), as sops
// writes it.
var macOnlyEncryptedInit = []byte{
	0x8a, 0x3f, 0xd2, 0xad, 0x54, 0xce, 0x66, 0x52, 0x7b, 0x10, 0x34, 0xf3, 0xd1, 0x47, 0xbe, 0x0b,
	0x0b, 0x97, 0x5b, 0x3b, 0xf4, 0x4f, 0x72, 0xc6, 0xfd, 0xad, 0xec, 0x81, 0x76, 0xf2, 0x7d, 0x69,
}

// errUnsupportedType says a plain value is of a type sops cannot hash (a
// YAML integer beyond int64, for one).
var errUnsupportedType = errors.New("a value of a type SOPS does not support")

// macBytes is what the MAC hashes for a plain value: its text as sops
// formats it (integers in decimal, floats without exponent or trailing
// zeros, booleans as True and False).
func macBytes(v any) ([]byte, error) {
	switch v := v.(type) {
	case string:
		return []byte(v), nil
	case []byte:
		return v, nil
	case int:
		return strconv.AppendInt(nil, int64(v), 10), nil
	case float64:
		return strconv.AppendFloat(nil, v, 'f', -1, 64), nil
	case bool:
		if v {
			return []byte("True"), nil
		}
		return []byte("False"), nil
	case time.Time:
		return v.MarshalText()
	case comment:
		return []byte(v), nil
	}
	return nil, errUnsupportedType
}
