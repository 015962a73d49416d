import { registerEventTypes } from '../../events/catalogue.js';

/** Webhook events of chat (docs/chat.md), written in the transaction of the change that caused them. */
export const CHAT_EVENTS = {
  'chat.message.new': 'a message was stored in a channel (data: the message with channelId and seq)',
  'chat.message.updated': 'a message was edited (data: the message)',
  'chat.message.deleted': 'a message was deleted (data: the message, text emptied)',
  'chat.channel.created': 'a channel was created (data: the channel and its member ids)',
  'chat.channel.updated': 'a channel was renamed or its data changed (data: the channel)',
  'chat.channel.deleted': 'a channel and its history were deleted (data: channelId)',
  'chat.member.added': 'users joined a channel (data: channelId, userIds)',
  'chat.member.removed': 'users left or were removed from a channel (data: channelId, userIds)',
} as const;
registerEventTypes(CHAT_EVENTS);

declare module '../../events/catalogue.js' {
  interface ProductEventTypes {
    'chat.message.new': true;
    'chat.message.updated': true;
    'chat.message.deleted': true;
    'chat.channel.created': true;
    'chat.channel.updated': true;
    'chat.channel.deleted': true;
    'chat.member.added': true;
    'chat.member.removed': true;
  }
}
