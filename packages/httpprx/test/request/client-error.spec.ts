import { describe, expect, it } from 'vitest';
import { clientErrorOf, rawErrorResponse } from '../../src/request/client-error.js';

const err = (code: string) => Object.assign(new Error(code), { code });

describe('answers to what the HTTP parser refuses', () => {
  it.each([
    ['HPE_INVALID_METHOD', 400, 'CORAL_BAD_REQUEST'],
    ['HPE_INVALID_TRANSFER_ENCODING', 400, 'CORAL_BAD_REQUEST'],
    ['HPE_UNEXPECTED_CONTENT_LENGTH', 400, 'CORAL_BAD_REQUEST'],
    ['HPE_HEADER_OVERFLOW', 431, 'CORAL_HEADERS_TOO_LARGE'],
    ['ERR_HTTP_REQUEST_TIMEOUT', 408, 'CORAL_REQUEST_TIMEOUT'],
    ['ERR_HTTP_HEADERS_TIMEOUT', 408, 'CORAL_REQUEST_TIMEOUT'],
  ])('%s → %i %s', (code, status, coral) => {
    const e = clientErrorOf(err(code));
    expect(e.status).toBe(status);
    expect(e.code).toBe(coral);
  });

  it('is a complete HTTP/1.1 response with Connection: close and a Content-Length that fits', () => {
    const bytes = rawErrorResponse(clientErrorOf(err('HPE_HEADER_OVERFLOW')), '1.1 coral-abc');
    const text = bytes.toString('latin1');
    const [head, body] = text.split('\r\n\r\n') as [string, string];
    expect(head.split('\r\n')[0]).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    expect(head).toMatch(/\r\nconnection: close(\r\n|$)/);
    expect(head).toMatch(/\r\nx-coral-error: CORAL_HEADERS_TOO_LARGE\r\n/);
    expect(head).toMatch(/\r\nvia: 1\.1 coral-abc\r\n/);
    expect(Number(/content-length: (\d+)/.exec(head)![1])).toBe(Buffer.byteLength(body));
  });
});
