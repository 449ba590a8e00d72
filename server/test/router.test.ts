import { describe, expect, it } from 'vitest';
import { Router } from '../src/transports/http/router.js';

describe('Router', () => {
  const r = new Router<string>();
  r.add('POST', '/api/channels/{channelId}/messages', 'post');
  r.add('GET', '/api/channels/{channelId}/messages', 'list');
  r.add('GET', '/api/bots/auth', 'auth');
  r.add('GET', '/api/bots/{botId}', 'bot');

  it('matches parameters, literal segments first', () => {
    expect(r.match('POST', '/api/channels/0193a2b4-5c6d-7e8f/messages')).toEqual({
      handler: 'post',
      params: { channelId: '0193a2b4-5c6d-7e8f' },
    });
    expect(r.match('GET', '/api/bots/auth')).toEqual({ handler: 'auth', params: {} });
    expect(r.match('GET', '/api/bots/b1')).toEqual({ handler: 'bot', params: { botId: 'b1' } });
  });

  it('decodes percent-escapes in a parameter, and finds no route for a malformed one', () => {
    expect(r.match('GET', '/api/bots/a%20b%2Fc')).toEqual({ handler: 'bot', params: { botId: 'a b/c' } });
    expect(r.match('GET', '/api/bots/%E0%A4%A')).toBeNull();
    expect(r.match('GET', '/api/bots/%zz')).toBeNull();
  });

  it('answers the allowed methods for a path without the method, null for no path', () => {
    expect(r.match('DELETE', '/api/channels/c1/messages')).toEqual({ allowed: ['POST', 'GET'] });
    expect(r.match('GET', '/api/nothing')).toBeNull();
  });
});
