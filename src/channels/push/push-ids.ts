import { newId } from '../../util/ids.js';

/**
 * Push's id prefixes. Ids are time-sortable (newId): lists page by id, newest first, and the send purge bounds its
 * scan by the primary key (idFloor), so a send's id must be made with PUSH_SEND_ID_PREFIX.
 */
export const PUSH_APP_ID_PREFIX = 'papp_';
export const PUSH_DEVICE_ID_PREFIX = 'pdev_';
export const PUSH_SEND_ID_PREFIX = 'push_';

export const newAppId = (): string => newId(PUSH_APP_ID_PREFIX);
export const newDeviceId = (): string => newId(PUSH_DEVICE_ID_PREFIX);
export const newSendId = (): string => newId(PUSH_SEND_ID_PREFIX);
