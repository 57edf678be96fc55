// structured-headers' BareItem names the DOM's BufferSource, which a Node program (lib ES2023, no
// DOM) lacks: without this its item types are unresolved and read as `any`. The DOM's definition.
type BufferSource = ArrayBufferView | ArrayBuffer;
